package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// LabelImage marks images built by BuildScratchImage.
const LabelImage = "synergy.image"

// scratchContext builds, in memory, the tar build context of a FROM scratch
// image: a Dockerfile copying rootfs/ to / and, under rootfs/, each file of
// files (image path -> host path) with its host permission bits. Entries
// are sorted and timestamps fixed, so the same inputs give the same context
// (and hit the engine's build cache).
func scratchContext(files map[string]string, entrypoint []string, user string) ([]byte, error) {
	if len(files) == 0 {
		return nil, errors.New("no files to put in the image")
	}
	type entry struct{ image, host string }
	var entries []entry
	for img, host := range files {
		p := path.Clean("/" + img)
		if p == "/" || strings.Contains(img, "..") {
			return nil, fmt.Errorf("image path %q: want a file path inside the image", img)
		}
		entries = append(entries, entry{strings.TrimPrefix(p, "/"), host})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].image < entries[j].image })

	df, err := scratchDockerfile(entrypoint, user)
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	add := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Uid, h.Gid, h.Format = mtime, 0, 0, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg}, []byte(df)); err != nil {
		return nil, fmt.Errorf("write build context: %w", err)
	}
	for _, e := range entries {
		for d := path.Dir("rootfs/" + e.image); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList) // parents sort before their children
	for _, d := range dirList {
		if err := add(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}, nil); err != nil {
			return nil, fmt.Errorf("write build context: %w", err)
		}
	}
	for _, e := range entries {
		fi, err := os.Stat(e.host)
		if err != nil {
			return nil, fmt.Errorf("image file %s: %w", e.image, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("image file %s: %s is not a regular file", e.image, e.host)
		}
		body, err := os.ReadFile(e.host)
		if err != nil {
			return nil, fmt.Errorf("image file %s: %w", e.image, err)
		}
		h := &tar.Header{Name: "rootfs/" + e.image, Mode: int64(fi.Mode().Perm()), Size: int64(len(body)), Typeflag: tar.TypeReg}
		if err := add(h, body); err != nil {
			return nil, fmt.Errorf("write build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write build context: %w", err)
	}
	return buf.Bytes(), nil
}

// scratchDockerfile is the Dockerfile of a scratch image holding rootfs/,
// with entrypoint and user when given.
func scratchDockerfile(entrypoint []string, user string) (string, error) {
	df := "FROM scratch\nCOPY rootfs/ /\n"
	if len(entrypoint) > 0 {
		ep, err := json.Marshal(entrypoint)
		if err != nil {
			return "", fmt.Errorf("encode entrypoint: %w", err)
		}
		df += "ENTRYPOINT " + string(ep) + "\n"
	}
	if user != "" {
		if strings.ContainsAny(user, " \t\n\\") {
			return "", fmt.Errorf("image user %q: want uid[:gid] or name[:group]", user)
		}
		df += "USER " + user + "\n"
	}
	return df, nil
}

// buildMessage is one line of the engine's build output stream; old engines
// put the error in "error", newer ones in "errorDetail".
type buildMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readBuildOutput consumes the build stream and returns the build's error,
// with the tail of its output for context.
func readBuildOutput(r io.Reader) error {
	dec := json.NewDecoder(r)
	var tail []string
	for {
		var m buildMessage
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		if s := strings.TrimSpace(m.Stream); s != "" {
			tail = append(tail, s)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			return fmt.Errorf("build failed: %s (after: %s)", msg, strings.Join(tail, " | "))
		}
	}
}

// BuildScratchImage builds a FROM scratch image tagged tag through the
// Engine API, with no pull: files maps paths inside the image (e.g.
// "/usr/local/bin/synthtrain") to host files (static binaries: a scratch
// image has no libc), and entrypoint, if given, becomes its ENTRYPOINT. It
// returns the image ID.
func (r *Runner) BuildScratchImage(ctx context.Context, tag string, files map[string]string, entrypoint []string) (string, error) {
	return r.BuildScratchImageAs(ctx, tag, files, entrypoint, "")
}

// BuildScratchImageAs is BuildScratchImage with a USER line: containers of
// the image run as user ("65534", "nobody:nogroup"; a name must be in an
// /etc/passwd among files). "" keeps root.
func (r *Runner) BuildScratchImageAs(ctx context.Context, tag string, files map[string]string, entrypoint []string, user string) (string, error) {
	if tag == "" {
		return "", errors.New("build scratch image: empty tag")
	}
	tarball, err := scratchContext(files, entrypoint, user)
	if err != nil {
		return "", fmt.Errorf("build scratch image %s: %w", tag, err)
	}
	res, err := r.images.ImageBuild(ctx, bytes.NewReader(tarball), client.ImageBuildOptions{
		Tags:        []string{tag},
		Remove:      true,
		ForceRemove: true,
		Dockerfile:  "Dockerfile",
		Labels:      map[string]string{LabelImage: "scratch"},
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", r.explain("build scratch image "+tag, err)
	}
	err = readBuildOutput(res.Body)
	res.Body.Close()
	if err != nil {
		return "", fmt.Errorf("build scratch image %s: %w", tag, err)
	}
	ins, err := r.images.ImageInspect(ctx, tag)
	if err != nil {
		return "", r.explain("inspect built image "+tag, err)
	}
	return ins.ID, nil
}

// RemoveImage deletes an image by tag or ID; an image that is not there is
// not an error.
func (r *Runner) RemoveImage(ctx context.Context, image string) error {
	_, err := r.images.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return r.explain("remove image "+image, err)
	}
	return nil
}

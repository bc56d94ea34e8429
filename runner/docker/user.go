package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// imageUser is the uid and gid a container of the image runs as.
type imageUser struct{ UID, GID int }

// userSpec is the image's USER ("", "uid", "name", "uid:gid",
// "name:group"), as the engine reports it.
func (r *Runner) userSpec(ctx context.Context) (string, error) {
	r.userMu.Lock()
	defer r.userMu.Unlock()
	if r.userKnown {
		return r.user, nil
	}
	ins, err := r.images.ImageInspect(ctx, r.opts.Image)
	if err != nil {
		return "", r.explain("inspect image "+r.opts.Image+" for its user", err)
	}
	if ins.Config != nil {
		r.user = ins.Config.User
	}
	r.userKnown = true
	return r.user, nil
}

// resolveUser turns a USER spec into numbers as the engine does: a number is
// taken as is (its group from /etc/passwd when listed there, else 0), a name
// is looked up in the image's /etc/passwd, a group in its /etc/group. read
// returns a file of the image's file system (fs.ErrNotExist when absent).
func resolveUser(spec string, read func(path string) (string, error)) (imageUser, error) {
	if spec == "" {
		return imageUser{}, nil
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	var u imageUser
	passwd, perr := read("/etc/passwd")
	if perr != nil && !errors.Is(perr, fs.ErrNotExist) {
		return u, fmt.Errorf("image user %q: read /etc/passwd: %w", spec, perr)
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		u.UID = n
		if e, ok := lookup(passwd, func(f []string) bool { return len(f) > 3 && f[2] == name }); ok {
			u.GID, _ = strconv.Atoi(e[3])
		}
	} else {
		e, ok := lookup(passwd, func(f []string) bool { return len(f) > 3 && f[0] == name })
		if !ok {
			return u, fmt.Errorf("image user %q: %q is not in the image's /etc/passwd", spec, name)
		}
		u.UID, _ = strconv.Atoi(e[2])
		u.GID, _ = strconv.Atoi(e[3])
	}
	if !hasGroup {
		return u, nil
	}
	if n, err := strconv.Atoi(group); err == nil && n >= 0 {
		u.GID = n
		return u, nil
	}
	groups, gerr := read("/etc/group")
	if gerr != nil && !errors.Is(gerr, fs.ErrNotExist) {
		return u, fmt.Errorf("image user %q: read /etc/group: %w", spec, gerr)
	}
	e, ok := lookup(groups, func(f []string) bool { return len(f) > 2 && f[0] == group })
	if !ok {
		return u, fmt.Errorf("image user %q: group %q is not in the image's /etc/group", spec, group)
	}
	u.GID, _ = strconv.Atoi(e[2])
	return u, nil
}

// lookup returns the first colon-separated line of db that match accepts.
func lookup(db string, match func([]string) bool) ([]string, bool) {
	sc := bufio.NewScanner(strings.NewReader(db))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if match(f) {
			return f, true
		}
	}
	return nil, false
}

// readFromContainer reads one file of a created container's file system.
func (r *Runner) readFromContainer(ctx context.Context, id string) func(string) (string, error) {
	return func(p string) (string, error) {
		res, err := r.api.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: p})
		if cerrdefs.IsNotFound(err) {
			return "", fs.ErrNotExist
		}
		if err != nil {
			return "", err
		}
		defer res.Content.Close()
		tr := tar.NewReader(res.Content)
		if _, err := tr.Next(); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		b, err := io.ReadAll(io.LimitReader(tr, 4<<20))
		return string(b), err
	}
}

// giveMetricsDir makes dir (the point's metrics directory, mounted
// read-write) owned by the container's user and mode 0700: that user can
// write it, nobody else but root can look in. It needs root unless the
// user is this process's own. A container running as root (which keeps
// CAP_DAC_OVERRIDE) writes it as it is.
func giveMetricsDir(dir string, u imageUser) error {
	if u.UID == 0 || u.UID == os.Geteuid() {
		return os.Chmod(dir, 0o700)
	}
	var chown []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		chown = append(chown, p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range chown {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == u.UID && int(st.Gid) == u.GID {
			continue
		}
		if err := os.Lchown(p, u.UID, u.GID); err != nil {
			return fmt.Errorf("make it the image user's (%d:%d): %w (synergy must run as root, or as uid %d, to hand it over)", u.UID, u.GID, err, u.UID)
		}
	}
	return os.Chmod(dir, 0o700)
}

package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestScratchContext(t *testing.T) {
	dir := t.TempDir()
	bin, cfg := filepath.Join(dir, "bin"), filepath.Join(dir, "cfg")
	if err := os.WriteFile(bin, []byte("\x7fELF..."), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("k=v"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"/usr/local/bin/synthtrain": bin, "etc/cfg": cfg}
	tarball, err := scratchContext(files, []string{"/usr/local/bin/synthtrain", "--x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	type ent struct {
		mode int64
		body string
	}
	got := map[string]ent{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = ent{h.Mode, string(b)}
		order = append(order, h.Name)
	}
	wantDF := "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/usr/local/bin/synthtrain\",\"--x\"]\n"
	if got["Dockerfile"].body != wantDF {
		t.Errorf("Dockerfile:\n%s\nwant:\n%s", got["Dockerfile"].body, wantDF)
	}
	if e := got["rootfs/usr/local/bin/synthtrain"]; e.mode != 0o755 || e.body != "\x7fELF..." {
		t.Errorf("binary entry %+v", e)
	}
	if e := got["rootfs/etc/cfg"]; e.mode != 0o600 || e.body != "k=v" {
		t.Errorf("cfg entry %+v", e)
	}
	for _, d := range []string{"rootfs/", "rootfs/usr/", "rootfs/usr/local/", "rootfs/usr/local/bin/", "rootfs/etc/"} {
		if _, ok := got[d]; !ok {
			t.Errorf("no directory entry %s in %v", d, order)
		}
	}
	// Same inputs, same bytes: the engine's build cache can hit.
	again, err := scratchContext(files, []string{"/usr/local/bin/synthtrain", "--x"}, "")
	if err != nil || !reflect.DeepEqual(again, tarball) {
		t.Error("scratchContext is not deterministic")
	}

	noEP, err := scratchContext(map[string]string{"/p": bin}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(noEP, []byte("ENTRYPOINT")) {
		t.Error("ENTRYPOINT written without an entrypoint")
	}
}

func TestScratchContext_BadInput(t *testing.T) {
	for _, tt := range []struct {
		files   map[string]string
		wantErr string
	}{
		{nil, "no files"},
		{map[string]string{"/": "/etc/hostname"}, `image path "/"`},
		{map[string]string{"../x": "/etc/hostname"}, `image path "../x"`},
		{map[string]string{"/x": "/no/such/file"}, "image file x"},
		{map[string]string{"/x": "/"}, "not a regular file"},
	} {
		if _, err := scratchContext(tt.files, nil, ""); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: err = %v, want %q", tt.files, err, tt.wantErr)
		}
	}
}

func TestReadBuildOutput(t *testing.T) {
	ok := `{"stream":"Step 1/2 : FROM scratch\n"}` + "\n" + `{"stream":" ---\u003e \n"}` + `{"aux":{"ID":"sha256:abc"}}`
	if err := readBuildOutput(strings.NewReader(ok)); err != nil {
		t.Errorf("clean build: %v", err)
	}
	for _, tt := range []struct{ out, want string }{
		{`{"stream":"Step 2/2 : COPY rootfs/ /"}{"errorDetail":{"message":"COPY failed: no source files"},"error":"COPY failed: no source files"}`, "build failed: COPY failed: no source files (after: Step 2/2 : COPY rootfs/ /)"},
		{`{"error":"old engine error"}`, "build failed: old engine error"},
		{`{"stream":`, "read build output"},
	} {
		if err := readBuildOutput(strings.NewReader(tt.out)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}

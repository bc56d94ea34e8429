package docker

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestResolveUser(t *testing.T) {
	files := map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65533::/:/sbin/nologin\ntrain:x:1000:1001::/home/train:/bin/sh\n",
		"/etc/group":  "root:x:0:\nnogroup:x:65533:\ntrain:x:1001:\nvideo:x:44:train\n",
	}
	read := func(p string) (string, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return "", fs.ErrNotExist
	}
	none := func(string) (string, error) { return "", fs.ErrNotExist }
	for _, tc := range []struct {
		spec string
		read func(string) (string, error)
		want imageUser
		err  string
	}{
		{"", read, imageUser{0, 0}, ""},
		{"65534", none, imageUser{65534, 0}, ""}, // not listed: group 0, as the engine does
		{"65534", read, imageUser{65534, 65533}, ""},
		{"nobody", read, imageUser{65534, 65533}, ""},
		{"train:video", read, imageUser{1000, 44}, ""},
		{"1000:2000", none, imageUser{1000, 2000}, ""},
		{"ghost", read, imageUser{}, `"ghost" is not in the image's /etc/passwd`},
		{"nobody", none, imageUser{}, `"nobody" is not in the image's /etc/passwd`},
		{"train:nosuch", read, imageUser{}, `group "nosuch" is not in the image's /etc/group`},
	} {
		got, err := resolveUser(tc.spec, tc.read)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resolveUser(%q) error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolveUser(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}

// TestStart_MetricsDirGoesToTheImageUser: a named image user is looked up in
// the created container's /etc/passwd, and the metrics directory (and what
// is in it) becomes that user's, mode 0700, before the container starts.
func TestStart_MetricsDirGoesToTheImageUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("handing a directory to another user needs root")
	}
	f := &fakeDocker{imageUser: "nobody", files: map[string]string{"/etc/passwd": "nobody:x:65534:65533::/:/sbin/nologin\n"}}
	r := fakeRunner(t, f, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	job := fakeJob()
	job.MetricsDir = dir
	h, err := r.Start(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h.Wait()
	for _, p := range []string{dir, filepath.Join(dir, "metrics.jsonl")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 65534 || st.Gid != 65533 {
			t.Errorf("%s owned by %d:%d, want 65534:65533", p, st.Uid, st.Gid)
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("metrics dir mode %v, want 0700", fi.Mode().Perm())
	}
	if f.called("copy /etc/passwd") != 1 {
		t.Errorf("calls %v: want /etc/passwd read from the created container once", f.calls)
	}

	// A user the image does not know fails the start, naming it, and
	// removes the container.
	f2 := &fakeDocker{imageUser: "ghost"}
	job.MetricsDir = t.TempDir()
	if _, err := fakeRunner(t, f2, nil).Start(context.Background(), job); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("unknown user: err %v, want one naming \"ghost\"", err)
	}
	if f2.called("remove") != 1 || f2.called("start") != 0 {
		t.Errorf("unknown user: calls %v, want the container removed, never started", f2.calls)
	}
}

package cgroupfs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestModeFromMounts_Layouts(t *testing.T) {
	tests := []struct {
		file, root, want string
	}{
		{"mounts-hybrid.txt", "/sys/fs/cgroup", ModeHybrid}, // this machine kind
		{"mounts-v1.txt", "/sys/fs/cgroup", ModeV1},
		{"mounts-v1-comounted.txt", "/sys/fs/cgroup", ModeV1},
		{"mounts-v2.txt", "/sys/fs/cgroup", ModeV2},
		{"mounts-v2.txt", "/sys/fs/cgroup/", ModeV2}, // trailing slash
		{"mounts-none.txt", "/sys/fs/cgroup", ModeNone},
		{"mounts-hybrid.txt", "/elsewhere", ModeNone}, // nothing under that root
	}
	for _, tt := range tests {
		t.Run(tt.file+"@"+tt.root, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := modeFromMounts(f, tt.root)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("mode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDetectMode_FakeProc(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := DetectMode(proc, "/sys/fs/cgroup"); got != ModeNone {
		t.Errorf("no mount table: mode = %q, want none", got)
	}
	b, err := os.ReadFile("testdata/mounts-v2.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "self", "mounts"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := DetectMode(proc, "/sys/fs/cgroup"); got != ModeV2 {
		t.Errorf("mode = %q, want v2", got)
	}
}

func TestParseMounts_EscapedAndBad(t *testing.T) {
	m, err := parseMounts(strings.NewReader(`cgroup /sys/fs/cgroup/my\040dir cgroup rw,memory 0 0` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m[0].Point != "/sys/fs/cgroup/my dir" {
		t.Errorf("point = %q, want the space unescaped", m[0].Point)
	}
	_, err = parseMounts(strings.NewReader("ok / ext4 rw 0 0\nbroken line\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}

func TestParseProcCgroup_Files(t *testing.T) {
	tests := []struct {
		file        string
		wantV1      map[string]string
		wantUnified string
	}{
		{"cgroup-hybrid.txt", map[string]string{
			"name=systemd": "/", "pids": "/", "blkio": "/", "freezer": "/", "devices": "/",
			"memory": "/process_api/ae84b602dc02ac415505559ecb4cca4c", "cpuset": "/", "cpuacct": "/", "cpu": "/",
		}, "/"},
		{"cgroup-v2.txt", map[string]string{}, "/user.slice/user-1000.slice/session-3.scope"},
		{"cgroup-comounted.txt", map[string]string{"cpu": "/docker/abc", "cpuacct": "/docker/abc", "memory": "/docker/abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseProcCgroup(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.V1, tt.wantV1) || got.Unified != tt.wantUnified {
				t.Errorf("got %v unified %q, want %v unified %q", got.V1, got.Unified, tt.wantV1, tt.wantUnified)
			}
		})
	}
}

func TestParseProcCgroup_BadLines(t *testing.T) {
	for _, in := range []string{"4:memory\n", "1:cpu:relative/path\n"} {
		if _, err := ParseProcCgroup([]byte(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err = %v, want one naming line 1", in, err)
		}
	}
}

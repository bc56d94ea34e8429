package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Where the profile goes is checked before anything is locked or made: a
// missing directory is named as such (not as an internal .lock file), a
// device or a directory at --out is said to be one, and --out, --log-dir
// or the timeline inside --data (through a symlink too) is refused naming
// both flags, since the profiler's files would change the dataset's
// fingerprint and --resume could never match it.
func TestProfileFlags_OutputPlace(t *testing.T) {
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "f"), make([]byte, 1<<20), 0o644)
	link := filepath.Join(t.TempDir(), "data-link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	elsewhere := filepath.Join(t.TempDir(), "p.json")
	script := []string{"--", "/bin/true"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"out in a missing directory", []string{"--out", filepath.Join(missing, "p.json")}, "--out " + filepath.Join(missing, "p.json") + ": the directory " + missing + " does not exist"},
		{"out a device", []string{"--out", "/dev/full"}, "--out /dev/full: it is a character device, not a profile file"},
		{"out a directory", []string{"--out", data}, "--out " + data + ": it is a directory, not a profile file"},
		{"out inside data", []string{"--data", data, "--out", filepath.Join(data, "p.json")}, "--out " + filepath.Join(data, "p.json") + " is inside --data " + data},
		{"out inside data through a symlink", []string{"--data", link, "--out", filepath.Join(data, "sub.json")}, "is inside --data " + link},
		{"log dir inside data", []string{"--data", data, "--out", elsewhere, "--log-dir", filepath.Join(data, "logs")}, "--log-dir " + filepath.Join(data, "logs") + " is inside --data"},
		{"warmup beyond any point", []string{"--warmup", "9223372036854775807"}, "--warmup: 9223372036854775807 is above 1000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkProfileFlags(t, 2, 4<<30, append(tc.args, script...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// Beside the dataset is fine.
	if _, err := checkProfileFlags(t, 2, 4<<30, append([]string{"--data", data, "--out", elsewhere, "--mem-limits", "64MiB"}, script...)...); err != nil {
		t.Errorf("--out beside --data: %v", err)
	}
}

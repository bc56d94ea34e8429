package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// victim is a file outside the directory an attacker writes, with content
// that must survive.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func assertUntouched(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "precious\n" {
		t.Errorf("victim %s now holds %q (%v), want it untouched", p, b, err)
	}
}

func TestMakeDir_RefusesAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	target := t.TempDir()
	logs := filepath.Join(dir, "p.logs")
	if err := os.Symlink(target, logs); err != nil {
		t.Fatal(err)
	}
	d, err := MakeDir(logs, 0o755)
	if err == nil {
		d.Close()
		t.Fatal("MakeDir followed a symlink planted where the directory goes")
	}
	if !strings.Contains(err.Error(), logs) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error %q, want it to name %s and the symlink", err, logs)
	}
}

func TestMakeDir_MakesParentsAndReusesADirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "p.logs")
	for range 2 { // made, then found
		d, err := MakeDir(p, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.WriteFile("x.log", []byte("hi"), 0o644); err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	if b, err := os.ReadFile(filepath.Join(p, "x.log")); err != nil || string(b) != "hi" {
		t.Errorf("x.log holds %q (%v), want the last write", b, err)
	}
}

func TestCreate_NeverOpensWhatWasPlanted(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink", "earlier file"} {
		t.Run(kind, func(t *testing.T) {
			v := victim(t)
			d, err := MakeDir(filepath.Join(t.TempDir(), "logs"), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			name := filepath.Join(d.Path(), "point.log")
			switch kind {
			case "symlink":
				err = os.Symlink(v, name)
			case "hardlink":
				err = os.Link(v, name)
			default:
				err = os.WriteFile(name, []byte("an earlier run's log, longer than the new one\n"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := d.Create("point.log", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("new\n")
			f.Close()
			if kind != "earlier file" {
				assertUntouched(t, v)
			}
			if b, _ := os.ReadFile(name); string(b) != "new\n" {
				t.Errorf("point.log holds %q, want only this run's output", b)
			}
			if st, _ := os.Lstat(name); !st.Mode().IsRegular() {
				t.Errorf("point.log is %v, want a regular file", st.Mode())
			}
		})
	}
}

func TestCreate_RefusesAPathOrADirectory(t *testing.T) {
	d, err := MakeDir(filepath.Join(t.TempDir(), "logs"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Create("../escape", 0o644); err == nil {
		t.Error("Create accepted a name with a directory in it")
	}
	os.Mkdir(filepath.Join(d.Path(), "sub"), 0o755)
	if _, err := d.Create("sub", 0o644); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Create over a directory: %v, want a refusal naming the directory", err)
	}
}

func TestReadFile_RefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{dir: "a directory", fifo: "a named pipe", "/dev/zero": "a character device"} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path, 1<<20, "profile"); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path+" is "+kind+", not a profile file") {
				t.Errorf("ReadFile(%s): %v, want it refused as %s", path, err, kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", path)
		}
	}
}

// A sparse file far above the bound is refused by its size: nothing is read.
func TestReadFile_RefusesAnOverBoundFileByItsSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil { // 10 GiB, sparse
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadFile(p, 64<<20, "profile")
	if err == nil || !strings.Contains(err.Error(), p+" is 10 GiB, above the 64 MiB a profile file may hold") {
		t.Errorf("ReadFile: %v, want a refusal naming the size and the bound", err)
	}
}

func TestReadFile_ReadsWithinTheBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	if b, err := ReadFile(p, 10, "profile"); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile at the bound: %q, %v", b, err)
	}
	if _, err := ReadFile(p, 9, "profile"); err == nil || !strings.Contains(err.Error(), "10 bytes, above the 9 bytes") {
		t.Errorf("ReadFile one byte over: %v", err)
	}
}

func TestOpenNoFollow_RefusesASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t")
	os.WriteFile(target, []byte("x"), 0o600)
	link := filepath.Join(dir, "l.samples.jsonl")
	os.Symlink(target, link)
	if f, _, err := OpenNoFollow(link, 1<<20, "timeline"); err == nil || !strings.Contains(err.Error(), link+" is a symlink, not a timeline file") {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenNoFollow(symlink): %v", err)
	}
	f, size, err := OpenNoFollow(target, 1<<20, "timeline")
	if err != nil || size != 1 {
		t.Fatalf("OpenNoFollow(file): %v", err)
	}
	f.Close()
}

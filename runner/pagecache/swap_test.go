package pagecache

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A dataset file swapped for a symlink or a FIFO after the walk saw it is
// not followed nor waited on.
func TestOpenRegular_RefusesASwappedFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("x"), 0o644)
	link, fifo, reg := filepath.Join(dir, "link"), filepath.Join(dir, "fifo"), filepath.Join(dir, "reg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(reg, []byte("data"), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := openRegular(link); err == nil {
			f.Close()
			t.Error("opened a file through a symlink")
		}
		if f, err := openRegular(fifo); err == nil {
			f.Close()
			t.Error("opened a FIFO")
		}
		f, err := openRegular(reg)
		if err != nil {
			t.Errorf("a regular file: %v", err)
			return
		}
		f.Close()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("openRegular blocked")
	}
}

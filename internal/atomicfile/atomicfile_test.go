package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite_ReplacesWithPerm(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new content" {
		t.Fatalf("content = %q, %v; want the new content", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v; want 0644", fi.Mode().Perm(), err)
	}
	assertOnly(t, dir, "out.json")
}

func TestWriteWith_FailureLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteWith(path, 0o644, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half a fi"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write function's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("content = %q after a failed write, want the old one", b)
	}
	assertOnly(t, dir, "out.json")
}

func TestWrite_NoDirectory(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "missing", "f"), nil, 0o644); err == nil {
		t.Error("wrote into a directory that does not exist")
	}
}

// assertOnly checks that dir holds exactly the named file: no temporary
// file is left behind.
func assertOnly(t *testing.T, dir, name string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != name {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s", names, name)
	}
}

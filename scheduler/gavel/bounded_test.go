package gavel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Gavel's JSON inputs are refused by their size, unread, past MaxFileBytes,
// and a directory or device as what it is.
func TestLoad_RefusesOverBoundAndNonRegularFiles(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil { // sparse: nothing is written
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct {
		name string
		load func(string) error
	}{
		{"throughputs", func(p string) error { _, err := LoadThroughputs(p); return err }},
		{"entities", func(p string) error { _, err := LoadEntities(p); return err }},
	} {
		if err := c.load(huge); err == nil || !strings.Contains(err.Error(), "is 10 GiB, above the 8 MiB a "+c.name+" file may hold") {
			t.Errorf("%s of a 10 GiB file: %v", c.name, err)
		}
		if err := c.load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "character device") {
			t.Errorf("%s of /dev/zero: %v", c.name, err)
		}
	}
}

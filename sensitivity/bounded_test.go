package sensitivity_test

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

func sparseFile(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}

// Load refuses a 10 GiB (sparse) file by its size, naming the bound,
// without reading it: the heap stays small.
func TestLoad_RefusesAnOverBoundFileUnread(t *testing.T) {
	p := sparseFile(t, 10<<30)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := sensitivity.Load(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), p+" is 10 GiB, above the 8 MiB a profile file may hold") {
		t.Errorf("Load: %v, want a refusal naming the file, its size and the bound", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("Load allocated %d bytes refusing the file, want under 1 MiB", grew)
	}
}

// Load refuses what is not a regular file, saying what it is, without
// reading it (/dev/zero would never end).
func TestLoad_RefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	for path, kind := range map[string]string{"/dev/zero": "a character device", dir: "a directory"} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s: %v", path, err)
		}
		if _, err := sensitivity.Load(path); err == nil || !strings.Contains(err.Error(), path+" is "+kind+", not a profile file") {
			t.Errorf("Load(%s): %v, want it refused as %s", path, err, kind)
		}
	}
}

// zeros is an endless reader.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// Decode stops an endless stream at the bound.
func TestDecode_StopsAtTheBound(t *testing.T) {
	_, err := sensitivity.Decode(io.Reader(zeros{}))
	if err == nil || !strings.Contains(err.Error(), "more than 8 MiB") {
		t.Errorf("Decode of an endless stream: %v, want a refusal at 8 MiB", err)
	}
}

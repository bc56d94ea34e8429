package pagecache

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/synergy-sched/synergy/internal/testreq"
)

// dataset writes files of the given sizes (synced, so their pages are
// clean) under a fresh directory on a disk-backed file system.
func dataset(t *testing.T, sizes map[string]int) (dir string, total int64) {
	t.Helper()
	dir = t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		testreq.Skip(t, "pagecache", dir+" is on tmpfs, whose pages cannot be evicted; set TMPDIR to a disk")
	}
	for name, n := range sizes {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		total += int64(n)
	}
	return dir, total
}

func testSizes() map[string]int {
	return map[string]int{
		"a.bin":         8 << 20,
		"b.bin":         4 << 20,
		"sub/c.bin":     1<<20 + 123, // partial last page
		"sub/empty.bin": 0,
	}
}

func TestEvictResidentWarm_RealPageCache(t *testing.T) {
	dir, total := dataset(t, testSizes())

	n, err := Warm(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Errorf("Warm read %d bytes, want %d", n, total)
	}
	res, tot, err := Resident(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tot != total {
		t.Errorf("Resident total = %d, want %d", tot, total)
	}
	if res > tot {
		t.Errorf("resident %d > total %d", res, tot)
	}
	if res < tot*95/100 {
		t.Errorf("after Warm: resident %d of %d bytes, want >= 95%%", res, tot)
	}

	files, err := Evict(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files != 4 {
		t.Errorf("Evict advised %d files, want 4", files)
	}
	res, _, err = Resident(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res > tot*5/100 {
		t.Errorf("after Evict: resident %d of %d bytes, want <= 5%%", res, tot)
	}
}

func TestEvict_DirtyPagesToo(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		testreq.Skip(t, "pagecache", dir+" is on tmpfs")
	}
	p := filepath.Join(dir, "fresh.bin")
	if err := os.WriteFile(p, make([]byte, 4<<20), 0o644); err != nil { // not synced: dirty
		t.Fatal(err)
	}
	if _, err := Evict(dir); err != nil {
		t.Fatal(err)
	}
	res, tot, err := Resident(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res > tot*5/100 {
		t.Errorf("freshly written file after Evict: resident %d of %d bytes, want <= 5%%", res, tot)
	}
}

func TestColdReadMBPerS_ReadsUpToLimitFromDisk(t *testing.T) {
	dir, _ := dataset(t, testSizes())
	if _, err := Warm(dir); err != nil {
		t.Fatal(err)
	}
	const limit = 6 << 20
	mbps, n, err := ColdReadMBPerS(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	if n != limit {
		t.Errorf("read %d bytes, want %d", n, limit)
	}
	if mbps <= 0 {
		t.Errorf("bandwidth %g MB/s, want > 0", mbps)
	}
	// It evicted first, so only what it read (plus readahead) is cached:
	// nothing of b.bin, which comes after a.bin and the limit.
	res, _, err := Resident(filepath.Join(dir, "b.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if res > 1<<20 {
		t.Errorf("b.bin has %d bytes resident after a cold read that stopped in a.bin", res)
	}
	t.Logf("cold read: %.0f MB/s over %d bytes", mbps, n)
}

func TestPagecache_Errors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Evict(missing); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Evict(missing) err = %v, want one naming the path", err)
	}
	if _, _, err := Resident(missing); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Resident(missing) err = %v, want one naming the path", err)
	}
	if _, _, err := ColdReadMBPerS(t.TempDir(), 0); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Errorf("ColdReadMBPerS(empty) err = %v, want 'no data'", err)
	}
}

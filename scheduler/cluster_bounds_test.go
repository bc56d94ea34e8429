package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cluster file far above the bound is refused by its size, unread; so is
// what is not a regular file.
func TestLoadCluster_BoundedRegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(10 << 30) // sparse
	f.Close()
	if _, err := LoadCluster(p); err == nil || !strings.Contains(err.Error(), p+" is 10 GiB, above the 16 MiB a cluster file may hold") {
		t.Errorf("LoadCluster(10 GiB): %v", err)
	}
	if _, err := LoadUsage(p); err == nil || !strings.Contains(err.Error(), "above the 16 MiB a usage file may hold") {
		t.Errorf("LoadUsage(10 GiB): %v", err)
	}
	if _, err := LoadCluster("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero is a character device, not a cluster file") {
		t.Errorf("LoadCluster(/dev/zero): %v", err)
	}
	if c, err := LoadCluster("default"); err != nil || len(c.Servers) != 16 {
		t.Errorf("the preset still loads: %v", err)
	}
}

// A server's figures are bounded so that no total overflows ("-2 GPUs"),
// and a name cannot carry terminal escapes.
func TestParseCluster_RefusesOverflowAndControlCharacters(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"groups": [{"count": 2, "gpus": 9223372036854775807, "cpus": 24, "mem_bytes": 500000000000}]}`, "groups[0] (server 0).gpus = 9223372036854775807: need 1 to 1024"},
		{`{"servers": [{"name": "a", "gpus": 8, "cpus": 1e300, "mem_bytes": 5}]}`, "servers[0].cpus = 1e+300: need a positive number up to"},
		{`{"servers": [{"name": "a", "gpus": 8, "cpus": 8, "mem_bytes": 9223372036854775807}]}`, "servers[0].mem_bytes = 9223372036854775807: need a positive number up to"},
		{`{"servers": [{"name": "a\u001b[2J", "gpus": 8, "cpus": 8, "mem_bytes": 5}]}`, `servers[0].name = "a\x1b[2J": holds a control character`},
	} {
		_, err := ParseCluster([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCluster(%s): %v, want %q", tc.json, err, tc.want)
		}
	}
	// At the bounds the totals are still right.
	c, err := ParseCluster([]byte(`{"groups": [{"count": 100000, "gpus": 1024, "cpus": 1048576, "mem_bytes": 1125899906842624}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tot := c.Totals(); tot.GPUs != 100000*1024 || tot.MemBytes <= 0 {
		t.Errorf("totals %+v, want 102400000 GPUs", tot)
	}
}

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

// Hostile cluster files (issue 40): each refused up front, naming the
// field, with no allocation in proportion to what a count claims.
func TestParseCluster_HostileInputs(t *testing.T) {
	big := strings.Repeat("n", 7<<20)
	for _, tc := range []struct{ name, json, want string }{
		{"count near 2^63 (passed the sum check by overflow)",
			`{"servers": [{"name": "a", "gpus": 8, "cpus": 8, "mem_bytes": 5}], "groups": [{"count": 9223372036854775807, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`,
			"groups[0].count = 9223372036854775807: more than 100000 servers in all"},
		{"count that overflows only with the servers before it",
			`{"servers": [{"name": "a", "gpus": 8, "cpus": 8, "mem_bytes": 5}], "groups": [{"count": 9223372036854775806, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`,
			"groups[0].count = 9223372036854775806: more than 100000"},
		{"second group past the bound", `{"groups": [{"count": 99999, "gpus": 8, "cpus": 24, "mem_bytes": 5}, {"count": 2, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`,
			"groups[1].count = 2: more than 100000 servers in all"},
		{"negative count", `{"groups": [{"count": -9223372036854775808, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`, "groups[0].count = -9223372036854775808: need at least 1"},
		{"1e-300 CPUs", `{"servers": [{"name": "a", "gpus": 8, "cpus": 1e-300, "mem_bytes": 5}]}`, "servers[0].cpus = 1e-300: below 0.01"},
		{"1e-300 CPUs in a group", `{"groups": [{"count": 1, "gpus": 8, "cpus": 1e-300, "mem_bytes": 5}]}`, "groups[0] (server 0).cpus = 1e-300: below 0.01"},
		{"duplicate key", `{"name": "lab", "groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5, "count": 100}]}`, `key "count" appears twice in groups[0]`},
		{"duplicate top-level key", `{"name": "a", "name": "b", "groups": []}`, `key "name" appears twice in the top-level object`},
		{"cluster name with escapes", `{"name": "lab\u001b]0;pwned\u0007", "groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`, `cluster: name = "lab\x1b]0;pwned\a": holds a control character (U+001B)`},
		{"cluster name with a bidi override", `{"name": "lab\u202egnp", "groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`, `cluster: name = "lab\u202egnp": holds a bidirectional-text control (U+202E)`},
		{"7 MB cluster name", `{"name": "` + big + `", "groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`, "cluster: name = \"nnnn"},
		{"server name with a bidi override", `{"servers": [{"name": "a\u2067b", "gpus": 8, "cpus": 8, "mem_bytes": 5}]}`, `servers[0].name = "a\u2067b": holds a bidirectional-text control (U+2067)`},
		{"7 MB server name", `{"servers": [{"name": "` + big + `", "gpus": 8, "cpus": 8, "mem_bytes": 5}]}`, "is 7340032 bytes long, more than 256"},
		{"group prefix with escapes", `{"groups": [{"count": 1, "prefix": "r\u001b[2J", "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`, `groups[0].prefix = "r\x1b[2J": holds a control character`},
		{"gpu_type with a bidi override", `{"groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5, "gpu_type": "v100\u202e"}]}`, `gpu_type = "v100\u202e": holds a bidirectional-text control`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCluster([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v\nwant %q", err, tc.want)
			}
			if err != nil && len(err.Error()) > 1000 {
				t.Errorf("the error is %d bytes long: a name from the file is not clipped", len(err.Error()))
			}
		})
	}
}

// A cluster named by a path unfit for a terminal is shown quoted.
func TestLoadCluster_NameFromPathIsQuoted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lab\x1b[2J.json")
	if err := os.WriteFile(p, []byte(`{"groups": [{"count": 1, "gpus": 8, "cpus": 24, "mem_bytes": 5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCluster(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(c.Name, 0x1b) || !strings.Contains(c.Name, `lab\x1b[2J.json`) {
		t.Errorf("cluster name %q, want the path quoted", c.Name)
	}
}

func TestParseUsage_HostileInputs(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"servers": [{"server": "a", "cpus": 1, "cpus": 30}]}`, `key "cpus" appears twice in servers[0]`},
		{`{"servers": [{"server": "a", "cpus": 1e-300}]}`, "servers[0].cpus = 1e-300: neither 0 nor at least 0.01"},
		{`{"servers": [{"server": "a\u202eb", "cpus": 1}]}`, `servers[0].server = "a\u202eb": holds a bidirectional-text control`},
		{`{"servers": [{"server": "` + strings.Repeat("s", 7<<20) + `"}]}`, "is 7340032 bytes long, more than 256"},
	} {
		_, err := ParseUsage([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 1000 {
			t.Errorf("ParseUsage(%.80s): %.300v, want %q", tc.json, err, tc.want)
		}
	}
	if u, err := ParseUsage([]byte(`{"servers": [{"server": "a", "cpus": 0}, {"server": "b", "cpus": 0.5}]}`)); err != nil || len(u) != 2 {
		t.Errorf("valid usage: %v, %v", u, err)
	}
}

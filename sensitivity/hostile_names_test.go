package sensitivity_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
)

// Hostile profile files (issue 40): a key given twice (a reviewer reads
// one value, synergy would use the other), a job name that reorders the
// terminal or runs to 7 MB, a CPU count of 1e-300: each refused, naming
// the field or key.
func TestDecode_HostileNamesAndKeys(t *testing.T) {
	golden, err := os.ReadFile("testdata/profile_v1.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sensitivity.Decode(bytes.NewReader(golden)); err != nil {
		t.Fatalf("the golden profile no longer decodes: %v", err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(golden, []byte(old)) {
			t.Fatalf("golden profile lacks %q", old)
		}
		return bytes.Replace(golden, []byte(old), []byte(new), 1)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"duplicate key", edit(`"name": "synthtrain",`, `"name": "synthtrain", "name": "other",`), `key "name" appears twice in job`},
		{"duplicate top-level key", edit(`"tool_version": "test",`, `"tool_version": "test", "tool_version": "x",`), `key "tool_version" appears twice in the top-level object`},
		{"bidi override in the job's name", edit(`"name": "synthtrain",`, `"name": "synth\u202etrain",`), "job.name"},
		{"control character in the job's name", edit(`"name": "synthtrain",`, `"name": "synth\u001b[2Jtrain",`), "holds a control character"},
		{"7 MB job name", edit(`"name": "synthtrain",`, `"name": "`+strings.Repeat("x", 7<<20)+`",`), "more than 256"},
		{"1e-300 CPUs on the axis", edit("\"cpus\": [\n      1,", "\"cpus\": [\n      1e-300,"), "axes.cpus[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sensitivity.Decode(bytes.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%.300v\nwant %q", err, tc.want)
			}
			if err != nil && len(err.Error()) > 1000 {
				t.Errorf("the error is %d bytes long: the name is not clipped", len(err.Error()))
			}
		})
	}
}

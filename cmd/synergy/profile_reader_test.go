package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// profileReaders are every command that reads a profile, with PROFILE where
// the profile goes and GOOD where a good one does.
var profileReaders = [][]string{
	{"matrix", "show", "PROFILE"},
	{"matrix", "diff", "PROFILE", "GOOD"},
	{"matrix", "diff", "GOOD", "PROFILE"},
	{"matrix", "export", "--format", "synergy-grid", "PROFILE"},
	{"matrix", "export", "--format", "gavel", "PROFILE"},
	{"matrix", "export", "--format", "slurm", "PROFILE"},
	{"matrix", "export", "--format", "k8s", "PROFILE"},
	{"matrix", "validate", "PROFILE"},
	{"schedule", "--cluster", "default", "PROFILE"},
	{"simulate", "--profile", "PROFILE", "--num-jobs", "4", "--window", "all", "--strategies", "tune", "--loads", "9"},
}

func readerArgs(cmd []string, profile, good string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		switch a {
		case "PROFILE":
			a = profile
		case "GOOD":
			a = good
		}
		out[i] = a
	}
	return out
}

// TestProfileReaders_RefuseEveryMalformedProfileAlike: every command that
// reads a profile accepts the good one and refuses each malformed one of
// the corpus (sensitivitytest.Malformed) with a non-zero exit and the
// reader's own message, naming the field: the commands agree on every file.
func TestProfileReaders_RefuseEveryMalformedProfileAlike(t *testing.T) {
	dir := t.TempDir()
	p := sensitivitytest.Good(filepath.Join(dir, "demo"))
	var buf bytes.Buffer
	if err := p.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A profile cut short (Ctrl-C: measured cells only, no fit) is valid
	// too: every command fills its holes the same way.
	partial := *p
	partial.Cells, partial.Fit, partial.Validation = nil, nil, nil
	for _, c := range p.Cells {
		if c.Measured {
			partial.Cells = append(partial.Cells, c)
		}
	}
	partialPath := filepath.Join(dir, "partial.json")
	if err := partial.Save(partialPath); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range profileReaders {
		for _, path := range []string{good, partialPath} {
			if out, code := runCLIOutput(t, readerArgs(cmd, path, good)...); code != 0 {
				t.Fatalf("%v on %s: exit %d\n%s", cmd, filepath.Base(path), code, out)
			}
		}
	}
	cases := sensitivitytest.Malformed(buf.Bytes())
	if len(cases) < 30 {
		t.Fatalf("%d malformed cases, want at least 30", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, want := sensitivity.Decode(bytes.NewReader(tc.JSON))
			if want == nil || !strings.Contains(want.Error(), tc.Field) {
				t.Fatalf("the reader does not refuse it naming %s: %v", tc.Field, want)
			}
			bad := filepath.Join(dir, fmt.Sprintf("bad%03d.json", i))
			if err := os.WriteFile(bad, tc.JSON, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range profileReaders {
				out, code := runCLIOutput(t, readerArgs(cmd, bad, good)...)
				if code == 0 {
					t.Errorf("%v: exit 0, want a refusal", cmd)
					continue
				}
				if !strings.Contains(out, bad+": "+want.Error()) {
					t.Errorf("%v: output does not hold the reader's message %q:\n%s", cmd, bad+": "+want.Error(), out)
				}
			}
		})
	}
}

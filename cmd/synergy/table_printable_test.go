package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// A table shows a name's control characters escaped: a server called
// "evil\x1b]0;pwned\a" cannot set the terminal's title or clear it.
func TestNewTable_EscapesControlCharacters(t *testing.T) {
	var out bytes.Buffer
	tb := newTable(&out)
	tb.Header([]string{"server", "gpus"})
	if err := tb.Append([]string{"evil\x1b]0;pwned\a\x1b[2J\u009b", "8"}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, c := range []string{"\x1b", "\a", "\u009b"} {
		if strings.Contains(s, c) {
			t.Errorf("table holds the raw control character %q:\n%s", c, s)
		}
	}
	if !strings.Contains(s, `evil\x1b]0;pwned\x07\x1b[2J\x9b`) || strings.Count(s, "\n") < 3 {
		t.Errorf("table does not show the name escaped, or lost its newlines:\n%s", s)
	}
	// A bidirectional-text control reorders what is shown: "evil\u202egnp.exe"
	// would read as "evilexe.png".
	out.Reset()
	fmt.Fprintln(printable{&out}, "removed", "evil\u202egnp.exe")
	if got := out.String(); got != "removed evil\\u202egnp.exe\n" {
		t.Errorf("printable wrote %q, want the override escaped", got)
	}
}

// Every file schedule reads is bounded: a 10 GiB (sparse) file given as the
// cluster, the usage or the throughputs is refused by its size, naming the
// flag, and /dev/zero as a matrix is refused as a device.
func TestSchedule_RefusesOverBoundFiles(t *testing.T) {
	huge := writeFile(t, "huge.json", "")
	if err := os.Truncate(huge, 10<<30); err != nil {
		t.Fatal(err)
	}
	cluster := writeFile(t, "mixed.json", mixedCluster)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "--cluster", huge, "zoo:res18"}, "is 10 GiB, above the 16 MiB a cluster file may hold"},
		{[]string{"schedule", "--cluster", cluster, "--throughputs", huge, "zoo:res18"}, "--throughputs: " + huge + " is 10 GiB, above the 8 MiB a throughputs file may hold"},
		{[]string{"matrix", "show", huge}, "is 10 GiB, above the 8 MiB a profile file may hold"},
		{[]string{"matrix", "show", "/dev/zero"}, "/dev/zero is a character device, not a profile file"},
	} {
		_, _, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A profile's warnings can quote what a job wrote: matrix show prints them
// with their control characters escaped too.
func TestPrintMatrix_EscapesWarnings(t *testing.T) {
	p := sensitivitytest.Demo("demo")
	p.Warnings = append(p.Warnings, "the job said \x1b]0;pwned\a")
	var out bytes.Buffer
	if err := printMatrix(&out, p); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.ContainsAny(s, "\x1b\a") || !strings.Contains(s, `warning: the job said \x1b]0;pwned\x07`) {
		t.Errorf("warning not escaped:\n%s", s)
	}
}

// The caption explains ~OOM only where a cell shows it.
func TestPrintMatrix_OOMLegendOnlyWhereShown(t *testing.T) {
	p := sensitivitytest.Demo("demo")
	var out bytes.Buffer
	if err := printMatrix(&out, p); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "~OOM") {
		t.Errorf("no cell is ~OOM, yet the table says it:\n%s", s)
	}
	for i := range p.Cells {
		if !p.Cells[i].Measured && p.Cells[i].MemLimitBytes > 0 {
			p.Cells[i].SamplesPerS, p.Cells[i].Failure = 0, nil
			break
		}
	}
	out.Reset()
	if err := printMatrix(&out, p); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "~OOM: an OOM kill predicted") || strings.Count(s, "~OOM") < 2 {
		t.Errorf("a ~OOM cell without its legend:\n%s", s)
	}
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/synergy-sched/synergy/sensitivity"
)

// checkProfileFlags runs `synergy profile ARGS` in this process up to the
// point where the first point would start: the flags are parsed and the
// axes resolved against a host of hostCPUs online CPUs and dramBytes of
// memory. Nothing is probed or run.
func checkProfileFlags(t *testing.T, hostCPUs int, dramBytes int64, args ...string) (profileOptions, error) {
	t.Helper()
	cmd := profileCommand()
	var o profileOptions
	cmd.Action = func(_ context.Context, c *cli.Command) error {
		var err error
		if o, err = parseProfileFlags(c); err != nil {
			return err
		}
		return resolveAxes(&o, sensitivity.HostInfo{LogicalCPUs: hostCPUs, DRAMBytes: dramBytes}, hostCPUs)
	}
	cmd.Writer, cmd.ErrWriter = &strings.Builder{}, &strings.Builder{}
	err := cmd.Run(context.Background(), append([]string{"profile", "--out", filepath.Join(t.TempDir(), "p.json")}, args...))
	return o, err
}

// TestProfileFlags_RefusedBeforeTheFirstPoint: flag values that cannot run
// (below what a CFS quota enforces, beyond the host's CPUs or memory, below
// what a job needs, absurd counts, durations no point fits in) are refused
// before anything starts, each naming its flag and why.
func TestProfileFlags_RefusedBeforeTheFirstPoint(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	const gib = 1 << 30
	script := []string{"--", "/bin/true"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cpus below a CFS quota", []string{"--cpus", "0.001"}, "--cpus: 0.001 CPU is below 0.01, the least a CFS quota can enforce (the kernel's minimum quota is 1 ms per 100 ms period)"},
		{"cpu below a CFS quota", []string{"--cpu", "0.005"}, "--cpu: 0.005 CPU is below 0.01"},
		{"cpus beyond the host", []string{"--cpus", "1,4"}, "--cpus: 4 cores asked but this host has 2 online CPUs"},
		{"cpu beyond the host names --cpu", []string{"--cpu", "3"}, "--cpu: 3 cores asked but this host has 2 online CPUs"},
		{"fraction needing one core more", []string{"--cpus", "2.5"}, "--cpus: 2.5 cores asked but this host has 2 online CPUs (a point pins ceil(cpus) = 3 cores)"},
		{"cpus zero", []string{"--cpus", "0"}, `--cpus: "0" is not a positive number of cores`},
		{"cpu negative", []string{"--cpu", "-1"}, "--cpu: -1 is not a positive number of cores"},
		{"memory limit below what a job needs", []string{"--mem-limits", "4MiB"}, "--mem-limits: 4MiB is below 8MiB: no job starts in less"},
		{"memory sweep reaching below what a job needs", []string{"--memory", "32MiB"}, "--memory: 32MiB sweeps down to 4MiB (MAX/8), below 8MiB"},
		{"memory limit at the host's DRAM", []string{"--mem-limits", "1GiB,4GiB"}, "--mem-limits: 4GiB is not below this host's 4GiB of memory"},
		{"memory sweep beyond the host's DRAM", []string{"--memory", "8GiB"}, "--memory: 4GiB is not below this host's 4GiB of memory"},
		{"max iterations zero", []string{"--max-iterations", "0"}, "--max-iterations: 0 is not a positive count"},
		{"max iterations negative", []string{"--max-iterations", "-3"}, "--max-iterations: -3 is not a positive count"},
		{"max iterations absurd", []string{"--max-iterations", "10000000000"}, "--max-iterations: 10000000000 is above 1000000000"},
		{"point timeout of 1ns", []string{"--point-timeout", "1ns"}, "--point-timeout: 1ns is below 10s: a point starts the job"},
		{"point timeout negative", []string{"--point-timeout", "-5s"}, "--point-timeout: -5s is not a positive duration"},
		{"sample interval negative", []string{"--sample-interval", "-1s"}, "--sample-interval: -1s is below 10ms"},
		{"budget zero", []string{"--budget", "0"}, "--budget: 0 points cannot cover both ends of an axis"},
		{"validate negative", []string{"--validate", "-1"}, "--validate: -1 is negative"},
		{"batch zero", []string{"-b", "0"}, "--batch: 0 is not a positive batch size"},
		{"batch absurd", []string{"-b", "100000000"}, "--batch: 100000000 is above 16777216"},
		{"10^12 GPUs", []string{"--num-gpus", "1000000000000"}, "--num-gpus: 1000000000000 is above 1024"},
		{"GPUs zero", []string{"--num-gpus", "0"}, "--num-gpus: 0 is not a positive GPU count"},
		{"job name with a newline", []string{"--job-name", "a\nb"}, `--job-name: "a\nb" holds a control character`},
		{"job name with a bidi override", []string{"--job-name", "train\u202egnp.exe"}, `--job-name: "train\u202egnp.exe" holds a bidirectional-text control (U+202E)`},
		{"7 MB job name", []string{"--job-name", strings.Repeat("j", 7<<20)}, "is 7340032 bytes long, more than 256"},
		{"1e-300 CPUs", []string{"--cpus", "1e-300"}, "--cpus: 1e-300 CPU is below 0.01"},
		{"1e-300 CPU sweep", []string{"--cpu", "1e-300"}, "--cpu: 1e-300 CPU is below 0.01"},
		{"target CI of 0", []string{"--target-ci", "0"}, "--target-ci: 0 is not a percentage in (0, 100)"},
		{"warm-up negative", []string{"--warmup", "-1"}, "--warmup: -1 is negative"},
		{"min iterations too few", []string{"--min-iterations", "3"}, "--min-iterations: 3 is below 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkProfileFlags(t, 2, 4*gib, append(append([]string{"--data", data}, tc.args...), script...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

// What the host allows passes, and the axes the flags leave empty come from
// the host (every online core) and the dataset.
func TestProfileFlags_AcceptedWithinTheHost(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--cpus", "0.01,0.5,2", "--mem-limits", "8MiB,1GiB", "--point-timeout", "10s"},
		{"--cpu", "2", "--memory", "64MiB"},
		{},
	} {
		o, err := checkProfileFlags(t, 2, 4<<30, append(append([]string{"--data", data}, args...), "--", "/bin/true")...)
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		if len(o.cfg.CPUs) == 0 || o.cfg.CPUs[len(o.cfg.CPUs)-1] > 2 || len(o.cfg.MemLimits) == 0 {
			t.Errorf("%v: axes %v × %v", args, o.cfg.CPUs, o.cfg.MemLimits)
		}
	}
	o, _ := checkProfileFlags(t, 2, 4<<30, "--data", data, "--", "/bin/true")
	if want := []float64{1, 2}; len(o.cfg.CPUs) != 2 || o.cfg.CPUs[0] != want[0] || o.cfg.CPUs[1] != want[1] {
		t.Errorf("default CPU axis on a 2-CPU host = %v, want %v", o.cfg.CPUs, want)
	}
}

// TestHelp_OneDefaultEachOnShownAsOnNamedPlaceholders: in the help of
// profile and of every matrix subcommand, each option states at most one
// default, an option that is on by default says "on" and how to turn it
// off, and every value placeholder is a NAME in capitals (never a type
// name or a phrase like "synergy profile").
func TestHelp_OneDefaultEachOnShownAsOnNamedPlaceholders(t *testing.T) {
	commands := map[string]*cli.Command{"profile": profileCommand()}
	for _, sub := range matrixCommand().Commands {
		commands["matrix "+sub.Name] = sub
	}
	for name, cmd := range commands {
		out, _, err := runCLI(t, append(strings.Fields(name), "--help")...)
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		_, opts, ok := strings.Cut(out, "OPTIONS:\n")
		if !ok {
			t.Fatalf("%s --help has no OPTIONS:\n%s", name, out)
		}
		bools := map[string]bool{"help": true}
		for _, fl := range cmd.Flags {
			if _, ok := fl.(*cli.BoolFlag); ok {
				bools[fl.Names()[0]] = true
			}
		}
		lines := map[string]string{}
		for _, line := range strings.Split(opts, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !strings.HasPrefix(f[0], "--") {
				continue
			}
			flag := strings.TrimSuffix(strings.TrimPrefix(f[0], "--"), ",")
			lines[flag] = line
			if n := strings.Count(line, "default"); n > 1 {
				t.Errorf("%s: --%s states %d defaults: %s", name, flag, n, line)
			}
			if bools[flag] {
				continue
			}
			// "--flag PLACEHOLDER[, -f PLACEHOLDER]  usage"
			if ph := strings.TrimSuffix(f[1], ","); ph == "" || ph != strings.ToUpper(ph) {
				t.Errorf("%s: --%s shows the placeholder %q, not a NAME: %s", name, flag, ph, line)
			}
		}
		for _, fl := range cmd.Flags {
			b, ok := fl.(*cli.BoolFlag)
			if !ok || !b.Value {
				continue
			}
			line := lines[b.Name]
			if !strings.Contains(line, "(default: on; --"+b.Name+"=false") {
				t.Errorf("%s: --%s is on by default but its help does not say so and how to turn it off: %s", name, b.Name, line)
			}
		}
	}
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/sensitivity"
	"github.com/synergy-sched/synergy/sensitivity/sensitivitytest"
)

// readmeMatrixExamples returns every `synergy matrix ...` line of the
// README's code blocks, as argument lists (comments dropped, "quoted words"
// kept whole, and a|b|c alternatives expanded into one example each).
func readmeMatrixExamples(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	inCode := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode || !strings.HasPrefix(line, "synergy matrix ") {
			continue
		}
		args := shellWords(t, line)
		out = append(out, expandAlternatives(args[1:])...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shellWords splits a command line as sh would for these examples: words
// separated by blanks, "double quotes" grouping, # starting a comment.
func shellWords(t *testing.T, line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case !quoted && r == '#' && !inWord:
			return append(words, flush(&cur, inWord)...)
		case !quoted && (r == ' ' || r == '\t'):
			words = append(words, flush(&cur, inWord)...)
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("README line with an open quote: %s", line)
	}
	return append(words, flush(&cur, inWord)...)
}

func flush(b *strings.Builder, inWord bool) []string {
	if !inWord {
		return nil
	}
	s := b.String()
	b.Reset()
	return []string{s}
}

// expandAlternatives turns a word "k8s|gavel" into one example per value.
func expandAlternatives(args []string) [][]string {
	for i, a := range args {
		if alts := strings.Split(a, "|"); len(alts) > 1 {
			var out [][]string
			for _, alt := range alts {
				c := append([]string(nil), args...)
				c[i] = alt
				out = append(out, expandAlternatives(c)...)
			}
			return out
		}
	}
	return [][]string{args}
}

// writeDemoTimeline writes the samples file and metrics stream the profile
// records for the point at (cpus, mem): a few ticks of an emulated job.
func writeDemoTimeline(t *testing.T, p *sensitivity.Profile, cpus float64, mem int64) {
	t.Helper()
	c := p.Cell(cpus, mem)
	if c == nil || c.Stats == nil || c.Stats.Timeline == "" {
		t.Fatalf("the demo profile records no timeline at cpus=%g mem=%d", cpus, mem)
	}
	if err := os.MkdirAll(filepath.Dir(c.Stats.Timeline), 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var samples, metrics strings.Builder
	for i := 0; i < 20; i++ {
		ts := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		fmt.Fprintf(&samples, `{"time":%q,"elapsed_s":%g,"cg_cpu_usage_s":%g,"host_cpu_pct":14}`+"\n", ts.Format(time.RFC3339Nano), float64(i)/10, 0.02*float64(i))
		fmt.Fprintf(&metrics, `{"iter":%d,"data_wait_s":0.001,"step_s":0.04,"ts":%.3f,"emulated":true}`+"\n", i, float64(ts.UnixNano())/1e9+0.041)
	}
	if err := os.WriteFile(c.Stats.Timeline, []byte(samples.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stream := strings.TrimSuffix(c.Stats.Timeline, ".samples.jsonl") + ".metrics.jsonl"
	if err := os.WriteFile(stream, []byte(metrics.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestREADME_MatrixExamplesRunOnTheDemoProfile runs every `synergy matrix`
// example of the README, as written, on a profile shaped like make demo's
// (strategy axes, no validate cell, timelines kept): each must succeed and
// draw what it says it draws. b.json is the same job with one cell
// measured for validation, so that diff scores a prediction.
func TestREADME_MatrixExamplesRunOnTheDemoProfile(t *testing.T) {
	dir := t.TempDir()
	demo := sensitivitytest.Demo(filepath.Join(dir, "demo"))
	writeDemoTimeline(t, demo, 1, 0)
	files := map[string]*sensitivity.Profile{
		"profile.json": demo,
		"a.json":       demo,
		"b.json":       sensitivitytest.Good(filepath.Join(dir, "demo")),
	}
	for name, p := range files {
		if err := p.Save(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	examples := readmeMatrixExamples(t)
	// show, show --timeline, diff, export slurm, export k8s|gavel|synergy-grid, validate
	if len(examples) < 8 {
		t.Fatalf("found %d `synergy matrix` examples in the README, want the 8 it shows: %v", len(examples), examples)
	}
	for _, ex := range examples {
		args := append([]string(nil), ex...)
		var drawn []string
		for i, a := range args {
			switch filepath.Ext(a) {
			case ".json":
				if files[a] == nil {
					t.Fatalf("README example %v names %s, not a file of this test", ex, a)
				}
				args[i] = filepath.Join(dir, a)
			case ".png", ".svg":
				args[i] = filepath.Join(dir, a)
				drawn = append(drawn, args[i])
			}
		}
		t.Run(strings.Join(ex, " "), func(t *testing.T) {
			for _, f := range drawn {
				os.Remove(f)
			}
			out, code := runCLIOutput(t, args...)
			if code != 0 {
				t.Fatalf("synergy %s: exit %d\n%s", strings.Join(ex, " "), code, out)
			}
			if strings.TrimSpace(out) == "" {
				t.Errorf("synergy %s printed nothing", strings.Join(ex, " "))
			}
			for _, f := range drawn {
				if st, err := os.Stat(f); err != nil || st.Size() == 0 {
					t.Errorf("synergy %s: %s not drawn (%v)", strings.Join(ex, " "), f, err)
				}
			}
		})
	}
}

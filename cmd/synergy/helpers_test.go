package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// binaries are the synergy and synthtrain executables built once per test
// binary for end-to-end tests.
type binaries struct {
	dir        string
	synergy    string
	synthtrain string
	err        error
}

// builtOnce builds both programs into a temporary directory the first time
// it is called; TestMain removes it.
var (
	buildOnce sync.Once
	built     *binaries
)

func builtOnce() *binaries {
	buildOnce.Do(func() { built = build() })
	return built
}

func build() *binaries {
	b := &binaries{}
	dir, err := os.MkdirTemp("", "synergy-e2e-bin-*")
	if err != nil {
		b.err = err
		return b
	}
	b.dir = dir
	b.synergy = filepath.Join(dir, "synergy")
	b.synthtrain = filepath.Join(dir, "synthtrain")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for _, c := range []struct {
		out, pkg string
		cgo      string
	}{{b.synergy, "./cmd/synergy", ""}, {b.synthtrain, "./cmd/synthtrain", "0"}} {
		cmd := exec.Command("go", "build", "-o", c.out, c.pkg)
		cmd.Dir = root
		cmd.Env = os.Environ()
		if c.cgo != "" {
			cmd.Env = append(cmd.Env, "CGO_ENABLED="+c.cgo)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.err = &buildError{pkg: c.pkg, err: err, out: stderr.String()}
			return b
		}
	}
	return b
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// buildBinaries returns the built programs or fails the test.
func buildBinaries(t *testing.T) *binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	b := builtOnce()
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b
}

// genDataset makes a synthtrain dataset of the given preset and size.
func genDataset(t *testing.T, b *binaries, preset, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data-"+preset)
	out, err := exec.Command(b.synthtrain, "gen", "--dir", dir, "--bytes", size, "--preset", preset, "--seed", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("synthtrain gen: %v\n%s", err, out)
	}
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built != nil && built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// runCLI runs the synergy command line in this process (args without the
// program name) and returns what it wrote through the command's writer and
// error writer. Commands must print through c.Root().Writer and ErrWriter
// for their output to be seen here.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err = app.Run(context.Background(), append([]string{"synergy"}, args...))
	return out.String(), errOut.String(), err
}

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
	"time"

	"github.com/synergy-sched/synergy/runner/local"
	"github.com/synergy-sched/synergy/runner/reap"
)

// binaries are the synergy and synthtrain executables, each built at most
// once per test binary into one temporary directory (TestMain removes it).
// Most tests run synergy in this process (runCLI) and need only
// synthtrain; the few that need synergy as its own process say why.
type binaries struct {
	synergy    string
	synthtrain string
}

var (
	binDirOnce sync.Once
	binDir     string
	binDirErr  error

	synergyBin, synthtrainBin builtBinary
)

// builtBinary is one program built on first use.
type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// get builds the package pkg (relative to the module root) as name, with
// extra environment entries, the first time it is called.
func (b *builtBinary) get(name, pkg string, env ...string) (string, error) {
	b.once.Do(func() {
		binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "synergy-e2e-bin-*") })
		if binDirErr != nil {
			b.err = binDirErr
			return
		}
		b.path = filepath.Join(binDir, name)
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.err = &buildError{pkg: pkg, err: err, out: stderr.String()}
		}
	})
	return b.path, b.err
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// buildSynthtrain returns the built synthtrain (static, for scratch
// images) or fails the test; end-to-end tests are skipped with -short.
func buildSynthtrain(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	path, err := synthtrainBin.get("synthtrain", "./cmd/synthtrain", "CGO_ENABLED=0")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// buildBinaries returns both built programs or fails the test: for the
// tests that must run synergy as a process of its own.
func buildBinaries(t *testing.T) *binaries {
	t.Helper()
	st := buildSynthtrain(t)
	path, err := synergyBin.get("synergy", "./cmd/synergy")
	if err != nil {
		t.Fatal(err)
	}
	return &binaries{synergy: path, synthtrain: st}
}

// genDataset makes a synthtrain dataset of the given preset and size.
func genDataset(t *testing.T, synthtrain, preset, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data-"+preset)
	out, err := exec.Command(synthtrain, "gen", "--dir", dir, "--bytes", size, "--preset", preset, "--seed", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("synthtrain gen: %v\n%s", err, out)
	}
	return dir
}

// TestMain serves as the local runner's gate when the runner re-executes
// this test binary (profiles run in-process, as in main), then runs the
// tests and removes the built programs.
func TestMain(m *testing.M) {
	if local.IsGate(os.Args) {
		local.GateMain()
	}
	if reap.IsWatchdog(os.Args) {
		reap.WatchdogMain()
	}
	// A profile that waits for the cores or dataset of another synergy run
	// on this host (another `make test`, a measurement) fails after
	// testHostWait naming that run, well before the package's timeout,
	// instead of hanging until it.
	if os.Getenv("SYNERGY_HOST_WAIT") == "" {
		os.Setenv("SYNERGY_HOST_WAIT", testHostWait.String())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// testHostWait bounds each profile's wait for another run's cores or
// dataset in these tests (make test's package timeout is 45 minutes).
const testHostWait = 10 * time.Minute

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

// runCLIOutput runs the synergy command line in this process and returns
// what the process would have shown (stdout, then stderr, then main's
// "synergy: ERROR" line) and its exit status (main exits 1 on any error).
func runCLIOutput(t *testing.T, args ...string) (output string, exitCode int) {
	t.Helper()
	stdout, stderr, err := runCLI(t, args...)
	output = stdout + stderr
	if err != nil {
		return output + "synergy: " + err.Error() + "\n", 1
	}
	return output, 0
}

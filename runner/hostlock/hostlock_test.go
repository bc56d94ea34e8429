package hostlock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary hold a lock in a process of its own.
const helperEnv = "SYNERGY_HOSTLOCK_HELPER"

func TestMain(m *testing.M) {
	// This process and its helpers hold locks as synergy runs do, and are
	// named as synergy is, so that messages call them synergy runs
	// (holderList); a holder under another name is a test of its own.
	_ = os.WriteFile("/proc/self/comm", []byte("synergy"), 0)
	if spec := os.Getenv(helperEnv); spec != "" {
		// "out PATH" or "cores DIR N": take it, say "held", wait for stdin to close.
		f := strings.Fields(spec)
		switch f[0] {
		case "out":
			if _, err := Out(f[1]); err != nil {
				os.Stdout.WriteString(err.Error() + "\n")
				os.Exit(1)
			}
		case "cores":
			n, _ := strconv.Atoi(f[2])
			c, err := ClaimCores(context.Background(), f[1], n, []int{0, 1}, 0, nil)
			if err != nil {
				os.Exit(1)
			}
			os.Stdout.WriteString(strconv.Itoa(c.CPUs()[0]) + "\n")
		}
		os.Stdout.WriteString("held\n")
		b := make([]byte, 1)
		os.Stdin.Read(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder runs the helper holding spec until the test ends (or kill is
// called) and returns its pid and first output line.
func holder(t *testing.T, spec string) (*exec.Cmd, string) {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+spec)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return cmd, line
}

func TestOut_SecondRunRefusedWithPID(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.json")
	cmd, _ := holder(t, "out "+out)
	_, err := Out(out)
	if !errors.Is(err, ErrOutBusy) || !strings.Contains(err.Error(), "PID "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("second lock of %s: %v, want ErrOutBusy naming PID %d", out, err, cmd.Process.Pid)
	}
	// kill -9 of the holder frees it: the kernel drops the flock.
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Out(out)
	if err != nil {
		t.Fatalf("after the holder died: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left after Release: %v", err)
	}
	// Two locks in this process conflict too (one per open file).
	a, err := Out(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Out(out); !errors.Is(err, ErrOutBusy) {
		t.Errorf("second lock in one process: %v, want ErrOutBusy", err)
	}
	a.Release()
}

func TestClaimCores_DisjointAndWaits(t *testing.T) {
	dir := t.TempDir()
	cmd, first := holder(t, "cores "+dir+" 1")
	if first != "0" {
		t.Fatalf("first claim got CPU %q, want 0 (lowest free)", first)
	}
	// One core left: a second run gets CPU 1, not the held 0.
	c, err := ClaimCores(context.Background(), dir, 1, []int{0, 1}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.CPUs(), []int{1}) {
		t.Errorf("second claim got %v, want [1]", c.CPUs())
	}
	c.Release()
	// Two cores while one is held: wait, naming the holder, until it ends.
	var msgs []string
	go func() { time.Sleep(600 * time.Millisecond); cmd.Process.Kill() }()
	c, err = ClaimCores(context.Background(), dir, 2, []int{0, 1}, 0, func(m string) { msgs = append(msgs, m) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if !slices.Equal(c.CPUs(), []int{0, 1}) {
		t.Errorf("claim after the holder died got %v, want [0 1]", c.CPUs())
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "PID "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(msgs[0], "CPU 0") {
		t.Errorf("wait messages %q, want one naming PID %d and CPU 0", msgs, cmd.Process.Pid)
	}
	// A cancelled wait ends with the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := ClaimCores(ctx, dir, 1, []int{0, 1}, 0, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("claim with every core held: %v, want the deadline", err)
	}
	if _, err := ClaimCores(context.Background(), dir, 3, []int{0, 1}, 0, nil); err == nil {
		t.Error("claiming more cores than available gave no error")
	}
}

// A bounded wait gives up with ErrGaveUp, naming the run that holds the
// cores, and does not wait much past its bound.
func TestClaimCores_BoundedWaitNamesHolder(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := holder(t, "cores "+dir+" 2")
	defer cmd.Process.Kill()
	start := time.Now()
	_, err := ClaimCores(context.Background(), dir, 1, []int{0, 1}, 400*time.Millisecond, nil)
	if !errors.Is(err, ErrGaveUp) {
		t.Fatalf("claim with every core held and a 400ms bound: %v, want ErrGaveUp", err)
	}
	if !strings.Contains(err.Error(), "PID "+strconv.Itoa(cmd.Process.Pid)) || !strings.Contains(err.Error(), "400ms") {
		t.Errorf("error %q does not name the holder's PID %d and the bound", err, cmd.Process.Pid)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Errorf("gave up after %v, before its 400ms bound", waited)
	}
}

func TestDataset_ColdWaitsForWarm(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	var notes []string
	a, err := OpenDataset(context.Background(), dir, data, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenDataset(context.Background(), dir, data, 0, func(m string) { notes = append(notes, m) })
	if err != nil {
		t.Fatal(err)
	}
	// Two warm points share it.
	if err := a.Shared(); err != nil {
		t.Fatal(err)
	}
	if err := b.Shared(); err != nil {
		t.Fatal(err)
	}
	// b's cold point waits until a's warm point is over.
	released := make(chan time.Time, 1)
	go func() { time.Sleep(500 * time.Millisecond); released <- time.Now(); a.Release() }()
	if err := b.Exclusive(); err != nil {
		t.Fatal(err)
	}
	if got := time.Now(); got.Before(<-released) {
		t.Error("the cold point did not wait for the warm one")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "PID "+strconv.Itoa(os.Getpid())) || !strings.Contains(notes[0], "relies on the dataset being cached") {
		t.Errorf("notes %q, want one naming this PID and the warm point", notes)
	}
	// ...and a's next warm point waits for b's cold one.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c, _ := OpenDataset(ctx, dir, data, 0, nil)
	if err := c.Shared(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("warm point during a cold one: %v, want to wait (deadline)", err)
	}
	// A bounded wait gives up naming the holder (this process).
	d, _ := OpenDataset(context.Background(), dir, data, 300*time.Millisecond, nil)
	if err := d.Shared(); !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "PID "+strconv.Itoa(os.Getpid())) {
		t.Errorf("bounded warm point during a cold one: %v, want ErrGaveUp naming PID %d", err, os.Getpid())
	}
	b.Release()
	if err := c.Shared(); err != nil {
		t.Errorf("warm point after the cold one ended: %v", err)
	}
	c.Release()
}

// A run that releases the dataset and asks again at once does not starve a
// run already waiting for it (the turnstile).
func TestDataset_WaiterIsNotStarved(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a, _ := OpenDataset(context.Background(), dir, data, 0, nil)
	b, _ := OpenDataset(context.Background(), dir, data, 0, nil)
	if err := a.Shared(); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		if err := b.Exclusive(); err != nil {
			t.Error(err)
		}
		got <- time.Now()
		time.Sleep(200 * time.Millisecond)
		b.Release()
	}()
	time.Sleep(300 * time.Millisecond) // b is waiting, holding the turnstile
	a.Release()
	if err := a.Shared(); err != nil { // a's next point, at once
		t.Fatal(err)
	}
	again := time.Now()
	a.Release()
	select {
	case bt := <-got:
		if again.Before(bt) {
			t.Errorf("a took the dataset again at %v, before the waiting b (%v)", again, bt)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b never got the dataset")
	}
}

// While one holder keeps two CPUs, the waiting run says so once, the set
// always written the same way (ascending ranges, not map order: "1,0"
// after "0-1" was a new line every poll), and when its bound ends it fails
// naming the holder.
func TestClaimCores_TellsRarelyAndCanonically(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := holder(t, "cores "+dir+" 2")
	defer cmd.Process.Kill()
	var msgs []string
	_, err := ClaimCores(context.Background(), dir, 1, []int{0, 1}, 2*time.Second, func(m string) { msgs = append(msgs, m) })
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "the synergy run with PID "+strconv.Itoa(cmd.Process.Pid)+" holds CPU 0-1") {
		t.Errorf("err = %v, want ErrGaveUp naming the synergy run %d and CPU 0-1", err, cmd.Process.Pid)
	}
	if len(msgs) != 1 || !strings.HasSuffix(msgs[0], "holds CPU 0-1") {
		t.Errorf("wait messages %q, want one ending \"holds CPU 0-1\"", msgs)
	}
	for range 50 {
		if m := busyMessage(1, []int{0, 1, 2, 3}, map[int][]int{3: {7}, 1: {7}, 0: {7}, 2: {8}}); !strings.Contains(m, "holds CPU 0-1,3") {
			t.Fatalf("busyMessage = %q, want CPU 0-1,3 for PID 7", m)
		}
	}
}

// A lock holder is named for what it is: a process whose name holds
// synergy is a synergy run, anything else (a plain flock(1), a name with
// escapes) is "process N (name)", its name escaped, and not called one.
func TestHolderList_NamesWhatHoldsIt(t *testing.T) {
	proc := t.TempDir()
	for pid, comm := range map[string]string{"12": "synergy\n", "13": "synergy\n", "34": "flock\n", "78": "h44-synergy\n", "56": "a\x1b]0;pwned\a\u202e\n"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "comm"), []byte(comm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pids []int
		want string
	}{
		{nil, "another process"},
		{[]int{12}, "the synergy run with PID 12"},
		{[]int{12, 13}, "the synergy runs with PIDs 12, 13"},
		{[]int{34}, "process 34 (flock)"},
		{[]int{12, 34, 99}, "the synergy run with PID 12 and process 34 (flock) and process 99 (gone)"},
		{[]int{56}, `process 56 ("a\x1b]0;pwned\a\u202e")`},
		{[]int{78}, "the synergy run with PID 78"}, // a renamed build
	} {
		if got := holderList(proc, tc.pids); got != tc.want {
			t.Errorf("holderList(%v) = %q, want %q", tc.pids, got, tc.want)
		}
	}
}

// A real flock(1) holding a core's lock is not called a synergy run.
func TestClaimCores_PlainFlockHolder(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1) on this host")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "cores"), 0o755); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "cores", "cpu0.lock")
	cmd := exec.Command(flock, "-n", lock, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); len(Holders(lock)) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	_, err = ClaimCores(context.Background(), dir, 2, []int{0, 1}, 500*time.Millisecond, nil)
	want := "process " + strconv.Itoa(cmd.Process.Pid) + " (flock) holds CPU 0"
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want ErrGaveUp with %q", err, want)
	}
}

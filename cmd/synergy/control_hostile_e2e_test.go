package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileControlJob writes, in a file of t's, a shell job that writes a
// metrics line every 10 ms and, at its first, answers the control
// channel's hello (unless plant replaces the answer file) and runs plant:
// a command line that swaps one of the channel's files for what a hostile
// job would put there. It returns the script's path (a command's arguments
// hold no newline).
func hostileControlJob(t *testing.T, plant string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte(hostileControlScript(plant)), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func hostileControlScript(plant string) string {
	return `m="$SYNERGY_METRICS_FILE"; ctl="$SYNERGY_CONTROL_FILE"; ack="$SYNERGY_CONTROL_ACK_FILE"; i=0
while :; do
  ts=$(date +%s.%N)
  echo "{\"iter\":$i,\"samples\":8,\"data_wait_s\":0.001,\"step_s\":0.01,\"ts\":$ts}" >> "$m"
  if [ $i = 0 ]; then
    echo "{\"seq\":0,\"workers\":1,\"ts\":$ts,\"iter\":0}" >> "$ack"
    ` + plant + `
  fi
  i=$((i+1)); sleep 0.01
done`
}

// A job (a real process, on the local runner) swaps its control file for
// a symlink to a root-only file, a dangling symlink, a FIFO, or its answer
// file for a FIFO, before the profiler's first command: the profile ends
// by itself, the launch relaunched with a reason naming the swap, the
// victim untouched, nothing created where the dangling link points.
func TestProfileE2E_AJobThatSwapsItsControlFilesIsRelaunched(t *testing.T) {
	needCgroups(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	nowhere := filepath.Join(dir, "made-by-root")
	for _, tc := range []struct{ name, plant, want string }{
		{"symlink", `rm -f "$ctl"; ln -s ` + victim + ` "$ctl"`, "is now a symlink"},
		{"dangling", `rm -f "$ctl"; ln -s ` + nowhere + ` "$ctl"`, "is now a symlink"},
		{"fifo", `rm -f "$ctl"; mkfifo "$ctl"`, "is now a FIFO"},
		{"ack-fifo", `rm -f "$ack"; mkfifo "$ack"`, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			job := fmt.Sprintf("e2ectl%s%d", strings.ReplaceAll(tc.name, "-", ""), os.Getpid())
			out := filepath.Join(dir, tc.name+".json")
			type result struct {
				log  string
				code int
			}
			done := make(chan result, 1)
			go func() {
				log, code := runCLIOutput(t, "profile", "--strategy", "axes", "--cpus", "1,2", "-b", "8", "--point-timeout", "20s",
					"--max-iterations", "60", "--job-name", job, "--out", out, "--", "/bin/sh", hostileControlJob(t, tc.plant))
				done <- result{log, code}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(4 * time.Minute):
				t.Fatal("the profile did not end in 4 minutes (a FIFO waited on?)")
			}
			if r.code != 0 || !strings.Contains(r.log, "relaunching the job") || !strings.Contains(r.log, tc.want) {
				t.Errorf("exit %d; want 0 with a relaunch saying %q:\n%s", r.code, tc.want, r.log)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
				t.Errorf("victim holds %q (%v), want it untouched", b, err)
			}
			if _, err := os.Lstat(nowhere); err == nil {
				t.Error("a file was made where the dangling link points")
			}
			if left := leftoverCgroups(t, job); len(left) > 0 {
				t.Errorf("cgroups left: %v", left)
			}
		})
	}
}

// SIGTERM ends synergy within seconds whatever the job planted: here a
// FIFO at its control file after it said hello, on which a profiler that
// opened the file to send its command would wait for ever.
func TestProfileE2E_SIGTERMEndsARunWhoseJobPlantedFIFOs(t *testing.T) {
	needCgroups(t)
	b := buildBinaries(t)
	job := fmt.Sprintf("e2ectlterm%d", os.Getpid())
	out := filepath.Join(t.TempDir(), "p.json")
	cmd := exec.Command(b.synergy, "profile", "--strategy", "axes", "--cpus", "1,2", "-b", "8", "--point-timeout", "5m",
		"--job-name", job, "--out", out, "--", "/bin/sh", hostileControlJob(t, `rm -f "$ctl"; mkfifo "$ctl"`))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log syncBuffer
	first, second := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		n := 0
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.HasSuffix(sc.Text(), ": starting") {
				if n++; n == 1 {
					close(first)
				} else if n == 2 {
					close(second)
				}
			}
		}
	}()
	select {
	case <-first:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the first point never started:\n%s", log.String())
	}
	// The move to the second point sends a command: by the second point's
	// start, or 30 s on, the profiler has met the FIFO.
	select {
	case <-second:
		time.Sleep(time.Second)
	case <-time.After(30 * time.Second):
	}
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
		t.Logf("synergy ended %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("synergy still runs 20 s after SIGTERM:\n%s", log.String())
	}
	if left := leftoverCgroups(t, job); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
}

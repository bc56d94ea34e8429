package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner/docker"
)

// hostileContainerJob is a job for a scratch image (no shell there): it
// writes a metrics line every 10 ms, answers the control channel's hello
// and, at its first line, swaps its control file, which synergy (root, on
// the host) writes its commands to through the bind mount, for a symlink
// to os.Args[1], a path on the host.
const hostileContainerJob = `package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	m, ctl, ack := os.Getenv("SYNERGY_METRICS_FILE"), os.Getenv("SYNERGY_CONTROL_FILE"), os.Getenv("SYNERGY_CONTROL_ACK_FILE")
	f, err := os.OpenFile(m, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		ts := float64(time.Now().UnixNano()) / 1e9
		fmt.Fprintf(f, "{\"iter\":%d,\"samples\":8,\"data_wait_s\":0.001,\"step_s\":0.01,\"ts\":%.6f}\n", i, ts)
		if i == 0 {
			if a, err := os.OpenFile(ack, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				fmt.Fprintf(a, "{\"seq\":0,\"workers\":1,\"ts\":%.6f,\"iter\":0}\n", ts)
				a.Close()
			}
			os.Remove(ctl)
			if err := os.Symlink(os.Args[1], ctl); err != nil {
				fmt.Fprintln(os.Stderr, "plant:", err)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
`

// buildHostileContainerJob compiles hostileContainerJob into a static
// binary (a scratch image has no libc) in a directory of t's.
func buildHostileContainerJob(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"go.mod": "module hostile\n\ngo 1.26\n", "main.go": hostileContainerJob} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "hostile")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the hostile job: %v\n%s", err, out)
	}
	return bin
}

// The same swaps as TestProfileE2E_AJobThatSwapsItsControlFilesIsRelaunched
// from inside a container whose user is not root, through the bind mount of
// its point directory: root on the host must neither append to the host
// file the link names nor create one where a dangling link points.
func TestDockerE2E_AContainerThatSwapsItsControlFileIsRelaunched(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	r, err := docker.New(docker.Options{})
	if err != nil {
		testreq.Skip(t, "docker", err.Error())
	}
	t.Cleanup(func() { r.Close() })
	if os.Geteuid() != 0 {
		t.Skip("handing the point directory to the image's user needs root")
	}
	hostile := buildHostileContainerJob(t)
	tag := fmt.Sprintf("synergy-e2e-hostile:%d-%d", os.Getpid(), time.Now().UnixNano())
	if _, err := r.BuildScratchImageAs(context.Background(), tag, map[string]string{"/hostile": hostile}, nil, "65534"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.RemoveImage(context.Background(), tag); err != nil {
			t.Errorf("remove test image: %v", err)
		}
	})
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	nowhere := filepath.Join(dir, "made-by-root")
	for _, tc := range []struct{ name, target string }{{"symlink", victim}, {"dangling", nowhere}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			job := e2eJobName(t)
			type result struct {
				log  string
				code int
			}
			done := make(chan result, 1)
			go func() {
				run := runProfileCmd(t, nil, "--runner", "docker", "--docker-img", tag, "--strategy", "axes", "--cpus", "1,2",
					"-b", "8", "--point-timeout", "20s", "--max-iterations", "60", "--stall-breakdown=false",
					"--job-name", job, "--", "/hostile", tc.target)
				done <- result{run.stderr, run.exitCode}
			}()
			var res result
			select {
			case res = <-done:
			case <-time.After(5 * time.Minute):
				t.Fatal("the profile did not end in 5 minutes")
			}
			if res.code != 0 || !strings.Contains(res.log, "relaunching the job") || !strings.Contains(res.log, "is now a symlink") {
				t.Errorf("exit %d; want 0 with a relaunch saying the control file is now a symlink:\n%s", res.code, res.log)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
				t.Errorf("victim holds %q (%v), want it untouched", b, err)
			}
			if _, err := os.Lstat(nowhere); err == nil {
				t.Error("a file was made where the dangling link points")
			}
			assertNoProfileContainers(t, job)
		})
	}
}

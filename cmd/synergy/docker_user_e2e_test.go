package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/internal/testreq"
	"github.com/synergy-sched/synergy/runner/docker"
)

// TestDockerE2E_NonRootImageProfiles profiles synthtrain in images whose
// USER is not root: a bare uid (65534, in no /etc/passwd) and a name looked
// up in the image's own /etc/passwd. Every point must be measured: the
// per-point directory is handed to that user (0700) before the container
// starts.
func TestDockerE2E_NonRootImageProfiles(t *testing.T) {
	synthtrain := buildSynthtrain(t)
	r, err := docker.New(docker.Options{})
	if err != nil {
		testreq.Skip(t, "docker", err.Error())
	}
	t.Cleanup(func() { r.Close() })
	if os.Geteuid() != 0 {
		t.Skip("handing the point directory to the image's user needs root")
	}
	data := genDataset(t, synthtrain, "language", "4MiB")
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0::/:/sbin/nologin\ntrainer:x:4242:4243::/:/sbin/nologin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, user string }{{"uid", "65534"}, {"name", "trainer"}} {
		t.Run(tc.name, func(t *testing.T) {
			tag := fmt.Sprintf("synergy-e2e-user:%d-%s-%d", os.Getpid(), tc.name, time.Now().UnixNano())
			files := map[string]string{"/usr/local/bin/synthtrain": synthtrain, "/etc/passwd": passwd}
			if _, err := r.BuildScratchImageAs(context.Background(), tag, files, nil, tc.user); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := r.RemoveImage(context.Background(), tag); err != nil {
					t.Errorf("remove test image: %v", err)
				}
			})
			job := e2eJobName(t)
			run := runProfileCmd(t, nil, "--runner", "docker", "--docker-img", tag, "--strategy", "axes", "--cpus", "1",
				"--mem-limits", "64MiB", "--data", data, "-b", "16", "--max-iterations", "60", "--stall-breakdown=false",
				"--job-name", job, "--", "/usr/local/bin/synthtrain", "--preset", "language", "--gpu-step", "5ms")
			p := run.load(t)
			if n := len(p.MeasuredOK()); n != 2 {
				t.Errorf("USER %s: %d points measured, want 2:\n%s", tc.user, n, run.stderr)
			}
			assertNoProfileContainers(t, job)
		})
	}
}

// TestDockerE2E_KillMinus9RemovesTheContainer kills the built synergy with
// SIGKILL while a point's container runs: the watchdog must remove the
// container (and the work directory) within 10 s.
func TestDockerE2E_KillMinus9RemovesTheContainer(t *testing.T) {
	b := buildBinaries(t)
	tag := synthtrainImage(t, b.synthtrain)
	job := e2eJobName(t)
	cmd := exec.Command(b.synergy, "profile", "--runner", "docker", "--docker-img", tag, "--strategy", "axes", "--cpus", "1",
		"-b", "4", "--point-timeout", "5m", "--stall-breakdown=false", "--job-name", job,
		"--out", filepath.Join(t.TempDir(), "p.json"), "--", "/usr/local/bin/synthtrain", "--preset", "language", "--gpu-step", "1s", "--synthetic-data")
	var log syncBuffer
	cmd.Stderr = &logWriter{&log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	c, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	filter := make(client.Filters).Add("label", docker.LabelJob+"="+job).Add("status", "running")
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		l, err := c.ContainerList(context.Background(), client.ContainerListOptions{Filters: filter})
		if err == nil && len(l.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running container for the point:\n%s", log.String())
		}
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	killed := time.Now()
	all := make(client.Filters).Add("label", docker.LabelJob+"="+job)
	for time.Since(killed) < 10*time.Second {
		l, err := c.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: all})
		if err == nil && len(l.Items) == 0 {
			t.Logf("container gone %v after kill -9", time.Since(killed).Round(time.Millisecond))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("the point's container outlived synergy by 10 s:\n%s", log.String())
	assertNoProfileContainers(t, job)
}

type logWriter struct{ b *syncBuffer }

func (w *logWriter) Write(p []byte) (int, error) { w.b.WriteString(string(p)); return len(p), nil }

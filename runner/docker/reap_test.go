package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/synergy-sched/synergy/runner/owner"
)

// deadOwner is the identity of a process that has ended.
func deadOwner(t *testing.T) owner.ID {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := owner.Of(owner.ProcRoot, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return id
}

func TestReapOrphans_PicksDeadOwnersOfThisHost(t *testing.T) {
	host, _ := os.Hostname()
	me, err := owner.Self()
	if err != nil {
		t.Fatal(err)
	}
	dead := deadOwner(t)
	reused := owner.ID{PID: me.PID, Start: me.Start + 7} // this PID, another process
	c := func(id string, state container.ContainerState, labels map[string]string) container.Summary {
		labels[LabelProfile], labels[LabelJob], labels[LabelPoint] = "1", "j", "cpus=1"
		created := time.Now().Add(-time.Hour)
		if id == "newexited" {
			created = time.Now()
		}
		return container.Summary{ID: id + "0000000000000000", State: state, Labels: labels, Created: created.Unix()}
	}
	f := &fakeDocker{listed: []container.Summary{
		c("live", container.StateRunning, map[string]string{LabelOwner: me.String(), LabelHost: host}),
		c("dead", container.StateRunning, map[string]string{LabelOwner: dead.String(), LabelHost: host}),
		c("reused", container.StateExited, map[string]string{LabelOwner: reused.String(), LabelHost: host}),
		c("elsewhere", container.StateRunning, map[string]string{LabelOwner: dead.String(), LabelHost: host + "-other"}),
		c("oldexited", container.StateExited, map[string]string{}),
		c("newexited", container.StateExited, map[string]string{}), // made just now: its maker may be collecting it
		c("oldrunning", container.StateRunning, map[string]string{}),
		c("garbled", container.StateExited, map[string]string{LabelOwner: "x", LabelHost: host}),
	}}
	o, _ := Options{Image: "img"}.withDefaults()
	r := newRunner(f, nil, o)
	removed, err := r.ReapOrphans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dead0000000000000000", "reused0000000000000000", "oldexited0000000000000000"}
	if !slices.Equal(f.removedIDs, want) {
		t.Errorf("removed %v, want %v", f.removedIDs, want)
	}
	if len(removed) != 3 {
		t.Errorf("report %v, want 3 lines", removed)
	}
	for _, ro := range f.removed {
		if !ro.Force {
			t.Error("an orphan that may still run was removed without Force (kill first)")
		}
	}
}

// TestEngine_ReapOrphans makes a running container owned by a dead process
// and one by this process; ReapOrphans removes the first only.
func TestEngine_ReapOrphans(t *testing.T) {
	r := realRunner(t, Options{})
	host, _ := os.Hostname()
	me, _ := owner.Self()
	ctx := context.Background()
	mk := func(id owner.ID) string {
		res, err := r.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{
			Image: r.opts.Image, Entrypoint: []string{"/probe", "--sleep"}, Cmd: []string{},
			Labels: map[string]string{LabelProfile: "1", LabelJob: "reaptest", LabelOwner: id.String(), LabelHost: host, "synergy.test": engine.runID},
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.api.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
		if _, err := r.api.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	liveID := mk(me)
	// Another synergy run on this host (a profile test of another package,
	// running beside this one) reaps dead owners' containers too and may
	// take the orphan first: then a fresh orphan is made, a few times.
	reported := false
	for attempt := 0; attempt < 5 && !reported; attempt++ {
		orphanID := mk(deadOwner(t))
		removed, err := r.ReapOrphans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// When the other run's reaper is removing the orphan at that moment,
		// this one leaves it to that run (the engine's 409 "removal already
		// in progress"), so the orphan may outlive this call by the time
		// that removal takes: it must be gone soon after, by someone.
		if err := waitGone(ctx, r, orphanID, 30*time.Second); err != nil {
			t.Errorf("orphaned container %.12s still exists: %v; removed %v", orphanID, err, removed)
		}
		for _, line := range removed {
			if strings.HasPrefix(line, fmt.Sprintf("container %.12s (reaptest", orphanID)) {
				reported = true
			}
		}
	}
	if _, err := r.api.ContainerInspect(ctx, liveID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("a live owner's container was removed: %v", err)
	}
	if !reported {
		t.Error("five orphaned containers reaped, none reported as removed by this run's ReapOrphans")
	}
}

// waitGone polls until the engine no longer knows container id, for at
// most d; it returns the last inspection's outcome when it is still there.
func waitGone(ctx context.Context, r *Runner, id string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		_, err := r.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s (inspect: %v)", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A container's labels are anyone's to set who can make one: what cleanup
// prints of them is cut and escaped.
func TestShownLabel(t *testing.T) {
	for in, want := range map[string]string{
		"train":                    "train",
		"cpus1-mem512MiB":          "cpus1-mem512MiB",
		"a\x1b]0;pwned\a":          `"a\x1b]0;pwned\a"`,
		"evil\u202etxt":            `"evil\u202etxt"`,
		strings.Repeat("x", 7<<20): strings.Repeat("x", 64) + "...",
	} {
		if got := shownLabel(in); got != want {
			t.Errorf("shownLabel(%.40q) = %.80q, want %.80q", in, got, want)
		}
	}
}

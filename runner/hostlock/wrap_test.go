package hostlock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/synergy-sched/synergy/runner"
)

type fakeRunner struct{ jobs []runner.Job }

func (f *fakeRunner) Name() string { return "fake" }
func (f *fakeRunner) Start(_ context.Context, job runner.Job) (runner.Handle, error) {
	f.jobs = append(f.jobs, job)
	return fakeHandle{}, nil
}

type fakeHandle struct{}

func (fakeHandle) Stats() (runner.Stats, error)   { return runner.Stats{}, nil }
func (fakeHandle) Stop() error                    { return nil }
func (fakeHandle) Wait() (runner.Result, error)   { return runner.Result{}, nil }
func (fakeHandle) CgroupPaths() map[string]string { return map[string]string{"unified": "/x"} }

func TestPinned_PinsToClaimedCoresAndReleasesTheDataset(t *testing.T) {
	dir := t.TempDir()
	cores, err := ClaimCores(context.Background(), dir, 3, []int{2, 5, 7, 9}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cores.Release()
	ds, _ := OpenDataset(context.Background(), dir, t.TempDir(), 0, nil)
	f := &fakeRunner{}
	p := Pinned{Runner: f, Cores: cores, Dataset: ds}
	if err := ds.Exclusive(); err != nil { // a cold point's preparation
		t.Fatal(err)
	}
	h, err := p.Start(context.Background(), runner.Job{Limits: runner.Limits{CPUs: 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	if h.CgroupPaths()["unified"] != "/x" {
		t.Error("the wrapped handle lost its cgroup paths")
	}
	// While the job runs, another run's warm point waits...
	other, _ := OpenDataset(context.Background(), dir, ds.data, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	other.ctx = ctx
	if err := other.Shared(); err == nil {
		t.Fatal("another run's warm point got the dataset during a cold point")
	}
	// ...and gets it once the job has been waited for.
	h.Wait()
	other.ctx = context.Background()
	if err := other.Shared(); err != nil {
		t.Fatalf("after the cold point's job ended: %v", err)
	}
	other.Release()
	p.Start(context.Background(), runner.Job{Limits: runner.Limits{CPUs: 4}})
	p.Start(context.Background(), runner.Job{Limits: runner.Limits{CPUs: 1, CPUSet: []int{9}}})
	for i, want := range [][]int{{2, 5}, {2, 5, 7}, {9}} {
		if !slices.Equal(f.jobs[i].Limits.CPUSet, want) {
			t.Errorf("job %d cpuset %v, want %v", i, f.jobs[i].Limits.CPUSet, want)
		}
	}
}

type updatableHandle struct {
	fakeHandle
	got *[]runner.Limits
}

func (h updatableHandle) Update(_ context.Context, l runner.Limits) error {
	*h.got = append(*h.got, l)
	return nil
}

type updatableRunner struct{ got []runner.Limits }

func (f *updatableRunner) Name() string { return "fake-updatable" }
func (f *updatableRunner) Start(_ context.Context, job runner.Job) (runner.Handle, error) {
	return updatableHandle{got: &f.got}, nil
}

// A pinned handle keeps its job's Updater (the sweep's windows need it) and
// pins each update to the claimed cores; a handle without one stays without.
func TestPinned_KeepsTheUpdaterAndPinsUpdates(t *testing.T) {
	dir := t.TempDir()
	cores, err := ClaimCores(context.Background(), dir, 2, []int{3, 6, 8}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cores.Release()
	ds, _ := OpenDataset(context.Background(), dir, t.TempDir(), 0, nil)
	f := &updatableRunner{}
	h, err := Pinned{Runner: f, Cores: cores, Dataset: ds}.Start(context.Background(), runner.Job{Limits: runner.Limits{CPUs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	u := runner.AsUpdater(h)
	if u == nil {
		t.Fatal("the pinned handle hides its job's Updater")
	}
	if err := u.Update(context.Background(), runner.Limits{CPUs: 2}); err != nil {
		t.Fatal(err)
	}
	if err := u.Update(context.Background(), runner.Limits{CPUs: 0.5}); err != nil {
		t.Fatal(err)
	}
	if len(f.got) != 2 || !slices.Equal(f.got[0].CPUSet, []int{3, 6}) || !slices.Equal(f.got[1].CPUSet, []int{3}) {
		t.Errorf("updates reached the job as %+v, want cpusets [3 6] then [3]", f.got)
	}
	h.Wait() // releases the dataset through the same handle
	plain, err := Pinned{Runner: &fakeRunner{}, Cores: cores}.Start(context.Background(), runner.Job{})
	if err != nil {
		t.Fatal(err)
	}
	if runner.AsUpdater(plain) != nil {
		t.Error("a handle whose job cannot be updated claims it can")
	}
}

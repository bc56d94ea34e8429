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
	cores, err := ClaimCores(context.Background(), dir, 3, []int{2, 5, 7, 9}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cores.Release()
	ds, _ := OpenDataset(context.Background(), dir, t.TempDir(), nil)
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
	other, _ := OpenDataset(context.Background(), dir, ds.data, nil)
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

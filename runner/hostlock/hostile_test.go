package hostlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func plantVictim(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(v, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

func victimUntouched(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "precious\n" {
		t.Errorf("victim holds %q (%v), want it untouched", b, err)
	}
}

// A symlink planted at OUT.lock is refused, not followed: its target keeps
// its content (the PID was written through it before).
func TestOut_RefusesAPlantedSymlink(t *testing.T) {
	v := plantVictim(t)
	out := filepath.Join(t.TempDir(), "p.json")
	if err := os.Symlink(v, out+".lock"); err != nil {
		t.Fatal(err)
	}
	l, err := Out(out)
	if err == nil {
		l.Release()
		t.Fatal("Out took a lock through a planted symlink")
	}
	if !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error %q does not say the lock file is a symlink", err)
	}
	victimUntouched(t, v)
}

// A hard link planted at OUT.lock is only locked, never written, and a FIFO
// is refused without waiting for a writer.
func TestOut_NeverWritesThroughAHardLinkOrAFIFO(t *testing.T) {
	v := plantVictim(t)
	out := filepath.Join(t.TempDir(), "p.json")
	if err := os.Link(v, out+".lock"); err != nil {
		t.Fatal(err)
	}
	l, err := Out(out)
	if err != nil {
		t.Fatal(err)
	}
	victimUntouched(t, v)
	l.Release()
	victimUntouched(t, v)

	fifo := filepath.Join(t.TempDir(), "q.json")
	if err := syscall.Mkfifo(fifo+".lock", 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Out(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Out with a FIFO at the lock: %v, want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Out blocked opening a FIFO planted at the lock")
	}
}

// --out in a missing directory names the directory, not the .lock file.
func TestOut_MissingDirectoryNamesIt(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	_, err := Out(filepath.Join(missing, "p.json"))
	if err == nil || !strings.Contains(err.Error(), "its directory "+missing+" does not exist") || strings.Contains(err.Error(), ".lock") {
		t.Errorf("Out in a missing directory: %v, want the directory named and no .lock", err)
	}
}

// Datasets one inside the other take turns; siblings do not.
func TestDataset_OverlappingDatasetsTakeTurns(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	sub, sib := filepath.Join(data, "class_000"), filepath.Join(data, "class_001")
	for _, d := range []string{sub, sib} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 400*time.Millisecond)
	}
	cases := []struct {
		name        string
		held, asked string
		heldEx, ask bool // exclusive?
		wantsToWait bool
	}{
		{"cold on the whole while warm on a part", sub, data, false, true, true},
		{"warm on a part while cold on the whole", data, sub, true, false, true},
		{"cold on a part while warm on the whole, through a symlink", link, sub, false, true, true},
		{"cold on a part while cold on its sibling", sib, sub, true, true, false},
		{"warm on a part while warm on the whole", data, sub, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := OpenDataset(context.Background(), dir, c.held, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			hold := a.Shared
			if c.heldEx {
				hold = a.Exclusive
			}
			if err := hold(); err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			ctx, cancel := short()
			defer cancel()
			var notes []string
			b, err := OpenDataset(ctx, dir, c.asked, 0, func(m string) { notes = append(notes, m) })
			if err != nil {
				t.Fatal(err)
			}
			ask := b.Shared
			if c.ask {
				ask = b.Exclusive
			}
			err = ask()
			waited := errors.Is(err, context.DeadlineExceeded)
			if waited != c.wantsToWait {
				t.Fatalf("second run: %v, want waiting %v", err, c.wantsToWait)
			}
			if !waited {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
			} else if len(notes) != 1 || !strings.Contains(notes[0], "overlap") {
				t.Errorf("notes %q, want one saying the datasets overlap", notes)
			}
		})
	}
}

// Lock files do not pile up: once every run has released a dataset its
// files are gone.
func TestDataset_ReleaseRemovesItsFiles(t *testing.T) {
	dir := t.TempDir()
	for range 3 {
		d, err := OpenDataset(context.Background(), dir, t.TempDir(), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Exclusive(); err != nil {
			t.Fatal(err)
		}
		if err := d.Shared(); err != nil {
			t.Fatal(err)
		}
		d.Release()
	}
	ents, err := os.ReadDir(filepath.Join(dir, "datasets"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left in datasets/: %v, want nothing", names)
	}
}

// A registry directory that another user could write is refused.
func TestRegistry_RefusesASharedDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDataset(context.Background(), dir, t.TempDir(), 0, nil); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("OpenDataset in a world-writable directory: %v, want a refusal", err)
	}
	if _, err := ClaimCores(context.Background(), dir, 1, []int{0}, 0, nil); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("ClaimCores in a world-writable directory: %v, want a refusal", err)
	}
}

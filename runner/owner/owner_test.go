package owner

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestStartTime_CommWithSpacesAndParens(t *testing.T) {
	line := "4242 (we ird) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200 18446744073709551615"
	got, err := startTime(line)
	if err != nil || got != 987654 {
		t.Fatalf("startTime = %d, %v; want 987654", got, err)
	}
	if _, err := startTime("4242 (short) S 1 2"); err == nil {
		t.Error("a truncated stat line gave no error")
	}
	if _, err := startTime("no parens at all"); err == nil {
		t.Error("a line without a command name gave no error")
	}
}

func TestParseAndSuffix(t *testing.T) {
	id := ID{PID: 123, Start: 456}
	if got, err := Parse(id.String()); err != nil || got != id {
		t.Fatalf("Parse(%q) = %v, %v", id.String(), got, err)
	}
	for _, bad := range []string{"", "123", "x-1", "0-5", "-1-5", "1-x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) gave no error", bad)
		}
	}
	for _, tc := range []struct {
		name, head string
		id         ID
		ok         bool
	}{
		{"synergy-my-job-12-34-5", "synergy-my-job", ID{12, 34}, true},
		{"synergy-profile-99-1000-123456", "synergy-profile", ID{99, 1000}, true},
		{"synergy-profile-123456", "", ID{}, false}, // an old name: no owner
		{"synergy-job-1-x-3", "", ID{}, false},
		{"synergy-job-1--3", "", ID{}, false},
	} {
		head, id, ok := ParseSuffix(tc.name)
		if ok != tc.ok || head != tc.head || id != tc.id {
			t.Errorf("ParseSuffix(%q) = %q, %v, %v; want %q, %v, %v", tc.name, head, id, ok, tc.head, tc.id, tc.ok)
		}
	}
}

// deadOwner starts a process, notes its identity, and lets it end.
func deadOwner(t *testing.T) ID {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := Of(ProcRoot, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(ProcRoot, id) {
		t.Fatal("a running child is not alive")
	}
	cmd.Process.Kill()
	cmd.Wait()
	return id
}

func TestAlive(t *testing.T) {
	me, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if me.PID != os.Getpid() || me.Start == 0 {
		t.Fatalf("Self = %v", me)
	}
	if !Alive(ProcRoot, me) {
		t.Error("this process is not alive")
	}
	// The same PID with another start time is a reused PID: not the owner.
	if Alive(ProcRoot, ID{PID: me.PID, Start: me.Start + 1}) {
		t.Error("a reused PID (other start time) counts as alive")
	}
	// A child killed but not yet waited for is a zombie: dead.
	z := exec.Command("sleep", "30")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	zid, err := Of(ProcRoot, z.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	z.Process.Kill()
	for i := 0; i < 200 && Alive(ProcRoot, zid); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if Alive(ProcRoot, zid) {
		t.Error("a zombie counts as alive")
	}
	z.Wait()
	if id := deadOwner(t); Alive(ProcRoot, id) {
		t.Errorf("a reaped child %v is alive", id)
	}
}

func TestTempDirs_ModeAndReap(t *testing.T) {
	root := t.TempDir()
	mine, err := MkdirTemp(root, TempDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(mine)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("work dir mode %v, want 0700", fi.Mode().Perm())
	}
	dead := filepath.Join(root, TempDirPrefix+"-"+deadOwner(t).String()+"-777")
	old := filepath.Join(root, TempDirPrefix+"-123456") // no owner in the name
	other := filepath.Join(root, "other-"+deadOwner(t).String()+"-1")
	for _, d := range []string{dead, old, other} {
		if err := os.MkdirAll(filepath.Join(d, "point-1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := ReapTempDirs(root, TempDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead {
		t.Errorf("removed %v, want only %s", removed, dead)
	}
	for _, d := range []string{mine, old, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s is still there", dead)
	}
}

package sensitivity

import (
	"strings"
	"testing"
)

func testIdentity() *Identity {
	return &Identity{
		Version: IdentityVersion,
		Command: []string{"python3", "/w/train.py", "--lr", "0.1"},
		Files:   []FileIdentity{{Arg: 1, Path: "/w/train.py", Bytes: 120, SHA256: strings.Repeat("ab", 32)}},
		Data:    &DatasetIdentity{Path: "/a", Bytes: 1288490189, Files: 1000, Fingerprint: strings.Repeat("cd", 32)},
		Runner:  "local",
		Grid: GridIdentity{CPUs: []float64{1, 2, 4}, MemLimitsBytes: []int64{1 << 30}, Strategy: "axes",
			Batch: 32, GPUs: 1, MaxIterations: 400, Warmup: 5, MinIterations: 30, TargetRelCI: 0.02, StallBreakdown: true},
	}
}

func TestCompareIdentity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(id *Identity)
		legacy bool
		want   []string // one line per difference; nil: none
	}{
		{"same", func(*Identity) {}, false, nil},
		{"another dataset", func(id *Identity) { id.Data = &DatasetIdentity{Path: "/b", Bytes: 2048, Files: 2, Fingerprint: "ef01"} }, false,
			[]string{"the profile was measured with --data /a (1.2GiB in 1000 files, fingerprint cdcdcdcdcdcd), this run has --data /b (2KiB in 2 files, fingerprint ef01)"}},
		{"dataset changed in place", func(id *Identity) { id.Data.Fingerprint = "ff" }, false,
			[]string{"--data /a (1.2GiB in 1000 files, fingerprint cdcdcdcdcdcd), this run has --data /a (1.2GiB in 1000 files, fingerprint ff) (its contents changed)"}},
		{"no dataset now", func(id *Identity) { id.Data = nil }, false, []string{"this run has --data none"}},
		{"grid and batch", func(id *Identity) { id.Grid.CPUs = []float64{1, 2}; id.Grid.Batch = 64 }, false,
			[]string{"--cpus 1,2,4, this run has --cpus 1,2", "--batch 32, this run has --batch 64"}},
		{"script edited", func(id *Identity) { id.Files[0].SHA256 = strings.Repeat("00", 32) }, false,
			[]string{"the file /w/train.py (120B, sha256 abababababab), this run has the file /w/train.py (120B, sha256 000000000000) (its contents changed)"}},
		{"runner and image", func(id *Identity) { id.Runner = "docker"; id.Image = "t:1" }, false,
			[]string{"--runner local, this run has --runner docker", "--docker-img (none), this run has --docker-img t:1"}},
		{"measurement settings", func(id *Identity) { id.Grid.TargetRelCI = 0.05; id.Grid.StallBreakdown = false }, false,
			[]string{"--target-ci 2, this run has --target-ci 5", "--stall-breakdown true, this run has --stall-breakdown false"}},
		// A legacy identity knows no contents and no measurement settings.
		{"legacy: contents unknown", func(id *Identity) { id.Data.Fingerprint = "ff"; id.Files = nil; id.Grid.Warmup = 9 }, true, nil},
		{"legacy: size still compared", func(id *Identity) { id.Data.Bytes++ }, true,
			[]string{"--data /a (1.2GiB in 1000 files), this run has --data /a (1.2GiB in 1000 files) (its contents changed)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was, cur := testIdentity(), testIdentity()
			if tc.legacy {
				was.Version, was.Files, was.Data.Fingerprint = 0, nil, ""
				was.Grid = GridIdentity{CPUs: was.Grid.CPUs, MemLimitsBytes: was.Grid.MemLimitsBytes, Strategy: "axes", Batch: 32, GPUs: 1, MaxIterations: 400}
			}
			tc.change(cur)
			ds := CompareIdentity(was, cur)
			if len(ds) != len(tc.want) {
				t.Fatalf("differences %q, want %d", ds, len(tc.want))
			}
			for i, d := range ds {
				if !strings.Contains(d.String(), tc.want[i]) {
					t.Errorf("difference %d = %q, want it to contain %q", i, d, tc.want[i])
				}
			}
		})
	}
}

func TestLegacyIdentity(t *testing.T) {
	p := &Profile{Job: JobInfo{Command: []string{"x"}, Runner: "local", Batch: 8, GPUs: 1, MaxIterations: 100, DataDir: "/d"},
		Host: HostInfo{DatasetBytes: 10, DatasetFiles: 2}, Strategy: "grid",
		Axes: Axes{CPUs: []float64{1, 2}, MemLimitBytes: []int64{1 << 30, 0}}}
	id := LegacyIdentity(p)
	if !id.Legacy() || id.Data.Path != "/d" || id.Data.Bytes != 10 || len(id.Grid.MemLimitsBytes) != 1 || id.Grid.Batch != 8 {
		t.Errorf("legacy identity = %+v (data %+v), want the profile's own fields, unlimited dropped from the memory axis", id, id.Data)
	}
}

package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// submit asks for the profile's ideal demand on the nodes' shape, not the
// GPU-proportional share: image on 2 GPUs, 6 CPUs and 32 GiB per GPU =
// 12 CPUs and 65536 MiB (the share would be 6 CPUs and 125 GB).
func TestPlanSubmit_IdealDemand(t *testing.T) {
	sp, err := PlanSubmit(localNodes(), SubmitRequest{Profile: examples + "image.json", GPUs: 2, Hold: true, Partition: "gpu",
		Sbatch: []string{"--time=10", "train.sh", "--lr", "0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(examples + "image.json")
	want := []string{"sbatch", "--parsable", "--nodes=1", "--ntasks=1", "--gres=gpu:2", "--cpus-per-task=12", "--mem=65536",
		"--comment=synergy:profile=" + abs, "--partition=gpu", "--hold", "--time=10", "train.sh", "--lr", "0.1"}
	if strings.Join(sp.Argv, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("argv\n got %q\nwant %q", sp.Argv, want)
	}
	if sp.FairCPUs != 6 || sp.CPUs != 12 || sp.MemMiB != 65536 {
		t.Errorf("plan %+v", sp)
	}
}

func TestPlanSubmit_GarbageIn(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	noGPU := localNodes()
	for i := range noGPU {
		noGPU[i].GPUs = 0
	}
	script := []string{"train.sh"}
	for _, tc := range []struct {
		name  string
		nodes []Node
		req   SubmitRequest
		want  string
	}{
		{"missing profile", localNodes(), SubmitRequest{Profile: filepath.Join(dir, "nope.json"), Sbatch: script}, "nope.json: no such file"},
		{"malformed profile", localNodes(), SubmitRequest{Profile: bad, Sbatch: script}, "bad.json"},
		{"no profile", localNodes(), SubmitRequest{Sbatch: script}, "no profile"},
		{"no script", localNodes(), SubmitRequest{Profile: examples + "image.json"}, "no batch script"},
		{"no GPU nodes", noGPU, SubmitRequest{Profile: examples + "image.json", Sbatch: script}, "no node with GPUs"},
		{"wider than a node", localNodes(), SubmitRequest{Profile: examples + "image.json", GPUs: 16, Sbatch: script}, "16 GPUs: the nodes have 8"},
	} {
		_, err := PlanSubmit(tc.nodes, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

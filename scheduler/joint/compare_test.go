package joint

import (
	"os"
	"testing"
)

// TestPrintComparison prints the docs/joint.md table when JOINT_TABLE=1 (not timed, asserts
// only that the simulations ran).
func TestPrintComparison(t *testing.T) {
	if os.Getenv("JOINT_TABLE") == "" {
		t.Skip("set JOINT_TABLE=1 to print the docs/joint.md comparison table")
	}
	rows, err := Compare(MixedCluster(), []uint64{0, 1, 2}, []float64{8, 16, 20, 24}, 300)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(os.Stdout, rows); err != nil {
		t.Fatal(err)
	}
}

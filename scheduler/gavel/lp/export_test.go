package lp

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestExportCPLEX writes the benchmark's max-min LP in CPLEX LP format for an outside solver
// (docs/gavel-lp.md times GLPK's glpsol on it). Run with GAVEL_LP_EXPORT=dir; skipped otherwise.
func TestExportCPLEX(t *testing.T) {
	dir := os.Getenv("GAVEL_LP_EXPORT")
	if dir == "" {
		t.Skip("GAVEL_LP_EXPORT not set (only used to time outside solvers)")
	}
	for _, n := range []int{256, 1024, 2048} {
		p := benchProblem(n)
		if err := writeCPLEX(fmt.Sprintf("%s/maxmin_%d.lp", dir, n), p); err != nil {
			t.Fatal(err)
		}
		sol, err := solveDetail(MaxMinFairnessPerf, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("n=%d: our optimum %.10g", n, sol.Objective)
	}
}

func writeCPLEX(path string, p Problem) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	coef := maxMinCoef(p, false)
	k := len(p.Types)
	fmt.Fprintln(w, "Maximize\n obj: z\nSubject To")
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }
	for m := range p.Jobs {
		fmt.Fprintf(w, " r%d:", m)
		for j := 0; j < k; j++ {
			fmt.Fprintf(w, " + x%d_%d", m, j)
		}
		fmt.Fprintln(w, " <= 1")
		fmt.Fprintf(w, " q%d:", m)
		for j := 0; j < k; j++ {
			fmt.Fprintf(w, " + %s x%d_%d", num(coef[m][j]), m, j)
		}
		fmt.Fprintln(w, " - z >= 0")
	}
	for j := 0; j < k; j++ {
		fmt.Fprintf(w, " c%d:", j)
		for m, jb := range p.Jobs {
			fmt.Fprintf(w, " + %d x%d_%d", jb.ScaleFactor, m, j)
		}
		fmt.Fprintf(w, " <= %d\n", p.Workers[j])
	}
	fmt.Fprintln(w, "End")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// pkg is the part of `go list -json` these tests read.
type pkg struct {
	ImportPath, Dir, Name string
	GoFiles, CgoFiles     []string
	Imports               []string
	Module                *struct{ Path string }
}

// listPackages runs `go list -json ./...` at the module root and returns the
// module path, its root directory and its packages (test files excluded:
// Imports lists what the package's own code imports).
func listPackages(t *testing.T) (string, string, []pkg) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 || pkgs[0].Module == nil {
		t.Fatal("go list returned no packages of a module")
	}
	return pkgs[0].Module.Path, root, pkgs
}

// ownImports maps each package (relative to the module) to the sorted list of
// the module's packages it imports.
func ownImports(module string, pkgs []pkg) map[string][]string {
	m := make(map[string][]string, len(pkgs))
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		var ours []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				ours = append(ours, strings.TrimPrefix(imp, module+"/"))
			}
		}
		sort.Strings(ours)
		m[name] = ours
	}
	return m
}

// table renders the import map as the markdown table the document holds.
func table(m map[string][]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| package | imports (ours) |\n| --- | --- |\n")
	for _, n := range names {
		cell := "none"
		if len(m[n]) > 0 {
			cell = "`" + strings.Join(m[n], "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, cell)
	}
	return b.String()
}

// docImports reads the import table of docs/ARCHITECTURE.md: rows of
// "| `pkg`[, `pkg`...] | `imp`, ... |" or "| ... | none |".
func docImports(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	m := map[string][]string{}
	inTable := false
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "| package | imports (ours) |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(text, "| ---") {
			continue
		}
		if !strings.HasPrefix(text, "|") {
			if len(m) > 0 {
				break
			}
			continue
		}
		cols := strings.Split(strings.Trim(text, "|"), "|")
		if len(cols) != 2 {
			t.Fatalf("%s:%d: an import row has two columns: %q", path, line, text)
		}
		var imps []string
		if strings.TrimSpace(cols[1]) != "none" {
			imps = names(cols[1])
			sort.Strings(imps)
		}
		for _, p := range names(cols[0]) {
			if _, dup := m[p]; dup {
				t.Fatalf("%s:%d: package %s listed twice", path, line, p)
			}
			m[p] = imps
		}
	}
	if len(m) == 0 {
		t.Fatalf("%s: no import table (a row headed \"| package | imports (ours) |\")", path)
	}
	return m
}

func names(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		if s := strings.Trim(strings.TrimSpace(part), "`"); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestArchitectureImportsMatchGoList keeps docs/ARCHITECTURE.md's import table
// true: every package, every arrow, nothing more. On failure it prints the
// table as go list sees it, ready to paste.
func TestArchitectureImportsMatchGoList(t *testing.T) {
	module, root, pkgs := listPackages(t)
	got := ownImports(module, pkgs)
	doc := docImports(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
	var diffs []string
	for p, imps := range got {
		d, ok := doc[p]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("package %s is missing from the document", p))
			continue
		}
		if strings.Join(d, " ") != strings.Join(imps, " ") {
			diffs = append(diffs, fmt.Sprintf("%s: document says %v, go list says %v", p, d, imps))
		}
	}
	for p := range doc {
		if _, ok := got[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("the document lists %s, which go list does not know", p))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Errorf("docs/ARCHITECTURE.md's import table is out of date:\n  %s\n\nThe table as go list sees it:\n\n%s",
			strings.Join(diffs, "\n  "), table(got))
	}
}

// soleImporter lists the outside libraries that only one package may import,
// by import-path prefix (the design: one adapter per outside library).
var soleImporter = []string{
	"github.com/urfave/cli",
	"github.com/olekukonko/tablewriter",
	"github.com/shirou/gopsutil",
	"github.com/moby/moby",
	"github.com/NVIDIA/go-nvml",
	"github.com/containerd/cgroups",
	"k8s.io/",
	"gonum.org/v1/plot",
}

func TestEachOutsideLibraryHasOneImporter(t *testing.T) {
	module, _, pkgs := listPackages(t)
	for _, lib := range soleImporter {
		importers := map[string]bool{}
		for _, p := range pkgs {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, lib) {
					importers[strings.TrimPrefix(p.ImportPath, module+"/")] = true
				}
			}
		}
		if len(importers) > 1 {
			var list []string
			for p := range importers {
				list = append(list, p)
			}
			sort.Strings(list)
			t.Errorf("%s is imported by %d packages (%s); the design gives each outside library one adapter package",
				lib, len(list), strings.Join(list, ", "))
		}
	}
}

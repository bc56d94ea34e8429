package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// testSupport are the packages that exist for tests (their exported names
// are called from other packages' tests by design).
var testSupport = map[string]bool{
	"internal/testreq": true, "internal/vmtest": true, "sensitivity/sensitivitytest": true,
}

// exportedWithoutCaller are the exported names kept without a caller in
// the module's own code, each with its reason.
var exportedWithoutCaller = map[string]string{
	// Names of a protocol or a set, kept whole so that the set reads as one.
	"models/pytorch.ProbeEnvLoader": "the probe's environment protocol, one name per setting",
	"models/pytorch.ProbeEnvSwitch": "the probe's environment protocol, one name per setting",
	"runner/cgroupfs.KeyCPUSet":     "the cgroup controller keys, one per controller",
	"runner.StatAll":                "the counter set's union",
	// A harness driving a job's end of the control channel by hand (the
	// jobs' tests): AppendAck's pair, with its rules; the profiler writes
	// through a jobcontract.ControlWriter it made before the launch.
	"jobcontract.AppendControl": "the control channel's writer for a harness, AppendAck's pair",
}

// Issue 32: no exported package-level name (function, type, variable,
// constant) without a caller in the module's non-test code, outside
// package main and the test-support packages, but for the named
// exceptions. A name counts as called when non-test code of its own
// package uses it, or when a package importing it selects it.
func TestEveryExportedNameHasACaller(t *testing.T) {
	mod, root, pkgs := listPackages(t)
	fset := token.NewFileSet()
	type def struct{ key, pos string }
	var defs []def
	used := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
		for _, f := range append(p.GoFiles, p.CgoFiles...) {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			declared := map[*ast.Ident]bool{}
			for _, id := range topLevelNames(af) {
				declared[id] = true
				if p.Name != "main" && !testSupport[rel] && id.IsExported() {
					defs = append(defs, def{p.ImportPath + "." + id.Name, fset.Position(id.Pos()).String()})
				}
			}
			markUses(af, p.ImportPath, declared, used)
		}
	}
	var missing []string
	for _, d := range defs {
		key := strings.TrimPrefix(strings.TrimPrefix(d.key, mod), "/")
		if _, ok := exportedWithoutCaller[key]; ok || used[d.key] {
			continue
		}
		missing = append(missing, strings.TrimPrefix(d.pos, root+"/")+": "+key)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s is exported but nothing outside the tests uses it: unexport it, remove it or give it its caller", m)
	}
}

// topLevelNames are a file's package-level functions (not methods), types,
// variables and constants.
func topLevelNames(f *ast.File) []*ast.Ident {
	var ids []*ast.Ident
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				ids = append(ids, d.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					ids = append(ids, s.Name)
				case *ast.ValueSpec:
					ids = append(ids, s.Names...)
				}
			}
		}
	}
	return ids
}

// markUses records in used every name of its own package (path) that f
// uses outside its declarations, and every imported name it selects.
func markUses(f *ast.File, path string, declared map[*ast.Ident]bool, used map[string]bool) {
	imports := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	markNode(f, imports, path, declared, used)
}

// markNode is markUses over one node of a file whose imports are given
// (name → path).
func markNode(root ast.Node, imports map[string]string, path string, declared map[*ast.Ident]bool, used map[string]bool) {
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if p, ok := imports[x.Name]; ok {
					used[p+"."+n.Sel.Name] = true
					return false
				}
			}
			// The selected name is a field or a method, never a use of
			// the package's own top-level name of that spelling (x.Run
			// does not call Run).
			markNode(n.X, imports, path, declared, used)
			return false
		case *ast.Ident:
			if !declared[n] {
				used[path+"."+n.Name] = true
			}
		}
		return true
	})
}

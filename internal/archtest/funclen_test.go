package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function's length (from its signature to its closing
// brace) outside tests: a longer one carries several jobs and is split by its
// phases.
const maxFuncLines = 80

// shortFuncDirs are the package trees the bound holds for: the joins named in
// the clean-up of issue 10 (a directory's subpackages included, but for
// those in skipDirs).
var shortFuncDirs = []string{
	"cmd/synergy", "runner", "profiler", "sensitivity", "scheduler", "jobcontract", "report",
	"models/synthtrain", "slurm", "k8s",
}

// skipDirs are subtrees of shortFuncDirs that the bound does not cover (none
// since scheduler/gavel joined).
var skipDirs = map[string]bool{}

func TestNoLongFunctions(t *testing.T) {
	_, root, _ := listPackages(t)
	fset := token.NewFileSet()
	for _, dir := range shortFuncDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				rel, _ := filepath.Rel(root, path)
				if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || skipDirs[filepath.ToSlash(rel)] {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > maxFuncLines {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s: func %s is %d lines (at most %d outside tests)", rel, fd.Name.Name, n, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", dir, err)
		}
	}
}

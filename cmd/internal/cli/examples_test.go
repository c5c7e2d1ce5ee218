package cli

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requiredExamples are the library examples a user starts from, named
// "<package directory>.<function>": deleting one fails TestEveryExampleRuns.
var requiredExamples = []string{
	"retrieval.ExampleNewDataset",
	"retrieval.ExampleLabelRelevance",
	"evaluate.ExampleRun",
	"evaluate/compare.ExampleCompute",
	"evaluate/compare.ExampleMergeReports",
	"evaluate/treceval.ExampleEvaluate",
	"results.ExampleReadReport",
	"runspec.ExampleOpen",
	"store/faulty.Example",
}

// TestEveryExampleRuns checks every Example function of the module's test
// files (the separate beam module and testdata aside): `go test` compiles
// an Example without an "// Output:" (or "// Unordered output:") comment
// but never runs it, so one without is an untested example. go/doc finds
// the output comment exactly as `go test` does (the last comment of the
// body); a top-level func named Example… that go/doc does not take for an
// example (parameters, results, a lower-case suffix) is reported too.
func TestEveryExampleRuns(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	fset := token.NewFileSet()
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			// As the go tool: hidden and "_" directories, testdata and
			// nested modules (beam/) are not packages of this module.
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		examples := map[string]*doc.Example{}
		for _, e := range doc.Examples(f) {
			examples["Example"+e.Name] = e // e.Name is the function name without "Example"
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			at := fset.Position(fn.Pos())
			where := fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), at.Line, fn.Name.Name)
			e, ok := examples[fn.Name.Name]
			switch {
			case !ok:
				t.Errorf("%s is not a runnable example (malformed name or signature)", where)
			case e.Output == "" && !e.EmptyOutput:
				t.Errorf("%s has no // Output: or // Unordered output: comment, so go test compiles it but never runs it", where)
			}
			found = append(found, dir+"."+fn.Name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range requiredExamples {
		if !slices.Contains(found, want) {
			t.Errorf("example %s is missing (found %v)", want, found)
		}
	}
}

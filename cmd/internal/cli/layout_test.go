package cli

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxTopLevelDirs bounds the repository's top level, so that it stays a
// map a newcomer can read at a glance.
const maxTopLevelDirs = 24

// modulePath is this module's import path.
const modulePath = "github.com/vertebrae-eval/vertebrae"

// TestLayout checks the layout rules of the repository (docs/library.md):
// every package keeps its comment in doc.go ("// Package <name> …" or, for
// a command, "// Command …") and in no other file; only cmd/ imports the
// command-line package; extract does not import evaluate (which runs
// extractors); the top level has at most maxTopLevelDirs directories.
func TestLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := 0
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs++
		}
	}
	if dirs > maxTopLevelDirs {
		t.Errorf("%d top-level directories, at most %d", dirs, maxTopLevelDirs)
	}
	fset := token.NewFileSet()
	type pkg struct {
		name     string
		commands bool // package main
		comments []string
		hasDoc   bool
	}
	pkgs := map[string]*pkg{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == modulePath+"/cmd/internal/cli" && !strings.HasPrefix(dir, "cmd/") {
				t.Errorf("%s imports the command-line package from outside cmd/", rel)
			}
			if p == modulePath+"/evaluate" && (dir == "extract" || strings.HasPrefix(dir, "extract/")) && !strings.HasSuffix(rel, "_test.go") {
				t.Errorf("%s: extract imports evaluate (evaluate runs extractors, not the reverse)", rel)
			}
		}
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		p := pkgs[dir]
		if p == nil {
			p = &pkg{name: f.Name.Name}
			pkgs[dir] = p
		}
		p.commands = f.Name.Name == "main"
		if filepath.Base(rel) == "doc.go" {
			p.hasDoc = true
		}
		if f.Doc != nil {
			p.comments = append(p.comments, rel)
			if filepath.Base(rel) == "doc.go" {
				text := f.Doc.Text()
				if want := "Package " + f.Name.Name + " "; !p.commands && !strings.HasPrefix(text, want) {
					t.Errorf("%s: the comment starts %q, want %q", rel, firstLine(text), want+"…")
				}
				if p.commands && !strings.HasPrefix(text, "Command ") {
					t.Errorf("%s: a command's comment starts %q, want \"Command …\"", rel, firstLine(text))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 50 {
		t.Fatalf("found %d packages: the walk did not see the module", len(pkgs))
	}
	for dir, p := range pkgs {
		switch {
		case !p.hasDoc:
			t.Errorf("%s: package %s has no doc.go", dir, p.name)
		case len(p.comments) != 1 || filepath.Base(p.comments[0]) != "doc.go":
			t.Errorf("%s: package comments in %v, want doc.go alone", dir, p.comments)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

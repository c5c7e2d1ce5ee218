package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
)

const module = "github.com/owulveryck/onnx-go@v0.5.0"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mnistgen:", err)
		os.Exit(1)
	}
}

func run() error {
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %w", module, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return fmt.Errorf("go mod download %s: no directory in %q", module, out)
	}
	src := filepath.Join(info.Dir, "internal", "examples", "mnist")
	model, err := stringLiteral(filepath.Join(src, "mnist_binary.go"), "GetMnist")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join("data", "mnist-8.onnx"), model); err != nil {
		return err
	}
	dst := filepath.Join("data", "mnist-8-testdata")
	for i := 0; i < 3; i++ {
		for _, f := range []string{"input_0.pb", "output_0.pb"} {
			b, err := os.ReadFile(filepath.Join(src, fmt.Sprintf("test_data_set_%d", i), f))
			if err != nil {
				return err
			}
			dir := filepath.Join(dst, fmt.Sprintf("test_data_set_%d", i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := atomicfile.Write(filepath.Join(dir, f), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// stringLiteral returns the value of the first string literal returned by
// function fn in file path.
func stringLiteral(path, fn string) ([]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var lit *ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		if d, ok := n.(*ast.FuncDecl); ok && d.Name.Name != fn {
			return false
		}
		if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING && lit == nil {
			lit = b
		}
		return lit == nil
	})
	if lit == nil {
		return nil, fmt.Errorf("%s: no string literal in %s", path, fn)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.HasPrefix([]byte(s), []byte{0x08}) {
		return nil, fmt.Errorf("%s: literal does not look like an ONNX model", path)
	}
	return []byte(s), nil
}

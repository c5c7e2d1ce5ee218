package plots

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDumpTemp(t *testing.T) {
	dir := os.Getenv("DUMP15B")
	if dir == "" {
		t.Skip()
	}
	files, err := Render(fakeBenchmark(t), []Format{SVG, PNG})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644)
	}
}

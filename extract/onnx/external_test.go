package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const testdataDir = "testdata"

func TestExternalDataFiles(t *testing.T) {
	got, err := externalDataFiles(filepath.Join(testdataDir, "tiny-text-external", "model.onnx"))
	if err != nil || len(got) != 1 || got[0] != filepath.Join(testdataDir, "tiny-text-external", "model.onnx_data") {
		t.Fatalf("externalDataFiles = %v, %v", got, err)
	}
	for _, dir := range []string{"tiny-text", "tiny-clip/onnx"} {
		files, _ := filepath.Glob(filepath.Join(testdataDir, dir, "*.onnx"))
		for _, f := range files {
			if got, err := externalDataFiles(f); err != nil || len(got) != 0 {
				t.Errorf("%s: %v, %v", f, got, err)
			}
		}
	}
	// A truncated model is an error naming the file, not a panic.
	data, _ := os.ReadFile(filepath.Join(testdataDir, "tiny-text-external", "model.onnx"))
	bad := filepath.Join(t.TempDir(), "cut.onnx")
	os.WriteFile(bad, data[:len(data)/2], 0o644)
	if _, err := externalDataFiles(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("truncated model: %v", err)
	}
}

// FuzzExternalDataFiles: arbitrary bytes as a model never panic or hang the
// streaming protobuf walk.
func FuzzExternalDataFiles(f *testing.F) {
	for _, p := range []string{"tiny-text-external/model.onnx"} {
		data, err := os.ReadFile(filepath.Join(testdataDir, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		locs, err := externalLocations(bytes.NewReader(data), int64(len(data)))
		if err == nil && !sort.StringsAreSorted(locs) {
			t.Fatalf("locations not sorted: %v", locs)
		}
	})
}

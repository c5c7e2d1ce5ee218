package onnx

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// LibraryEnv is the environment variable naming the ONNX Runtime shared
// library when no path is configured.
const LibraryEnv = "ONNXRUNTIME_LIB"

// ErrNotCompiled is returned by every constructor of a build without cgo.
var ErrNotCompiled = errors.New("the ONNX Runtime adapters are not compiled into this build (it was built with CGO_ENABLED=0; rebuild with cgo enabled)")

// LibraryNotFoundError reports that no ONNX Runtime shared library could be
// found; Tried lists the paths looked at, in order.
type LibraryNotFoundError struct {
	Source string // "configured path", LibraryEnv, or "standard locations"
	Tried  []string
}

func (e *LibraryNotFoundError) Error() string {
	return fmt.Sprintf("ONNX Runtime library not found (%s: %s); set onnxruntime_library in the run file, "+
		"pass --onnxruntime-lib, or set %s to the path of libonnxruntime (for linux x64, the npm package "+
		"onnxruntime-node ships it as bin/napi-v6/linux/x64/libonnxruntime.so.1)",
		e.Source, strings.Join(e.Tried, ", "), LibraryEnv)
}

// standardLibraryPaths are where package managers and manual installs put
// the library.
func standardLibraryPaths() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"/opt/homebrew/lib/libonnxruntime.dylib", "/usr/local/lib/libonnxruntime.dylib"}
	case "windows":
		return []string{"onnxruntime.dll"}
	}
	var out []string
	for _, dir := range []string{"/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64"} {
		out = append(out, dir+"/libonnxruntime.so", dir+"/libonnxruntime.so.1")
	}
	return out
}

// ResolveLibrary returns the ONNX Runtime library to load: configured when
// non-empty, else $ONNXRUNTIME_LIB, else the first standard location that
// exists. A configured or environment path must exist; it is never replaced
// by a guess. A bare file name ("libonnxruntime.so") is returned as is, for
// the dynamic loader to find on its search path.
func ResolveLibrary(configured string) (string, error) {
	source, candidates := "configured path", []string{configured}
	if configured == "" {
		if env := os.Getenv(LibraryEnv); env != "" {
			source, candidates = LibraryEnv, []string{env}
		} else {
			source, candidates = "standard locations", standardLibraryPaths()
		}
	}
	if len(candidates) == 1 && !strings.ContainsAny(candidates[0], `/\`) {
		return candidates[0], nil
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", &LibraryNotFoundError{Source: source, Tried: candidates}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/usage"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/internal/version"
)

// Exit codes of SPEC §6.1.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// UsageError is a command-line mistake (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// Main runs the CLI with args and returns the process exit code. SIGINT and
// SIGTERM cancel the run (exit 130).
func Main(args []string, stdout, stderr io.Writer) int {
	l, err := logger(os.Getenv(EnvLog), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vertebrae: %v\n", err)
		return ExitUsage
	}
	slog.SetDefault(l)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, stdout, stderr)
}

// Run is Main with an explicit context (tests call it in-process).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	err = flagNamedError(cmd, err) // "--similarity …", not "RetrievalConfig.similarity …" (flagnames.go)
	msg := strings.TrimSpace(err.Error())
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		msg = "interrupted" // not Go's "context canceled" (SPEC §6.1)
	}
	// One message line; continuation lines are indented context.
	msg = strings.ReplaceAll(msg, "\n", "\n  ")
	fmt.Fprintf(stderr, "vertebrae: %s\n", msg)
	return exitCode(ctx, err)
}

func exitCode(ctx context.Context, err error) int {
	var ue *UsageError
	switch {
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), usage.IsConfig(err): // run-file sections too (SPEC §12)
		return ExitUsage
	}
	return ExitFailure
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "vertebrae",
		Short:         "Compare frozen embedding backbones under an exact retrieval protocol",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("a command is required (try \"vertebrae --help\")")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(suggestFlagError) // "did you mean" (help.go), then flagError
	root.CompletionOptions.DisableDefaultCmd = true

	retrievalCmd := &cobra.Command{
		Use:   "retrieval",
		Short: "Evaluate embeddings under the exact retrieval protocol",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("a retrieval subcommand is required (try \"vertebrae retrieval --help\")")
		},
	}
	retrievalCmd.AddCommand(newRunCmd(stdout, stderr), newEvaluateRunCmd(stdout, stderr), newCompareCmd(stdout, stderr))
	retrievalCmd.AddCommand(newArtifactCmds(stdout, stderr)...) // SPEC §6.8, artifacts.go
	root.AddCommand(newDemoCmd(stdout, stderr), newVersionCmd(stdout), newBenchCmd(stdout), retrievalCmd)
	root.AddCommand(newModelsCmd(stdout))
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := kernel.EnvErr(); err != nil {
			return &UsageError{Msg: err.Error()}
		}
		return checkFlagRanges(cmd)
	}
	setupHelp(root)
	return root
}

// noArgs rejects positional arguments as usage errors (unknown commands),
// suggesting the closest subcommands.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return suggestCommand(cmd, args[0])
	}
	return nil
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the compiled-in adapters",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(stdout, "vertebrae %s\ngo %s %s/%s\nkernel: %s (available: %s)\nonnxruntime: %s\nbeam: not compiled in\n",
				version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH, kernel.Name(), strings.Join(kernel.Available(), ", "), onnxStatus())
			return nil
		},
	}
}

// onnxStatus says whether the ONNX adapters are compiled in and which
// library they would load.
func onnxStatus() string {
	if !onnx.Compiled {
		return "not compiled in (built without cgo)"
	}
	lib, err := onnx.ResolveLibrary("")
	if err != nil {
		return "compiled in; library not found (set " + onnx.LibraryEnv + ", or pass --onnxruntime-lib to demo --onnx or retrieval run)"
	}
	v, err := onnx.LoadRuntime(lib)
	if err != nil {
		return "compiled in; " + err.Error()
	}
	return "compiled in; " + lib + " (ONNX Runtime " + v + ")"
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx" // every runner and filesystem

	"github.com/vertebrae-eval/vertebrae/beam/pipeline"
)

var _ = beamx.Run // the import registers prism, flink, spark, dataflow, universal

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "run" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stdout, usage)
		os.Exit(0)
	}
	// A runner's PROCESS environment starting this binary as its own boot
	// program (--id=… --provision_endpoint=…): ask the provision service
	// for the worker's endpoints and options, then run as the worker.
	if bootArgs(args) {
		if err := boot(args); err != nil {
			fmt.Fprintf(os.Stderr, "vertebrae-beam: worker boot: %v\n", err)
			os.Exit(1)
		}
		_ = flag.CommandLine.Parse(nil) // boot set the harness flags
	} else {
		// A Beam runner (or a Go SDK boot program) starting this binary as
		// its worker (--worker --id=…): Beam's own flags.
		flag.Parse()
	}
	// beam.Init runs the harness in worker mode and exits.
	beam.Init()
	fmt.Fprintf(os.Stderr, "vertebrae-beam: unknown command %q\n%s", args[0], usage)
	os.Exit(2)
}

const usage = `usage: vertebrae-beam run --spec run.yaml --store URI --total-shards N
         [--query-block Q] [--shard-by contiguous|modulo] [--json PATH]
         [--onnxruntime-lib PATH] [--beam-option key=value ...]

--query-block Q > 0 scores query blocks × gallery shards, each worker loading
the whole gallery; 0 (default) runs the shard-local positives and count
stages (a worker reads only its gallery shard's rows).

--beam-option sets one Beam pipeline option (repeatable), e.g.
  runner=prism (default), runner=flink|spark|dataflow|universal,
  endpoint=HOST:PORT (portable job server), environment_type=LOOPBACK|PROCESS|DOCKER|EXTERNAL,
  environment_config=... (PROCESS: {"command": "/path/to/vertebrae-beam"}; the binary
  boots itself as the worker), worker_binary=PATH (a CGO_ENABLED=0 linux build of this binary),
  project=..., region=..., staging_location=gs://..., temp_location=gs://...
`

// options collects repeated --beam-option key=value flags.
type options []string

func (o *options) String() string     { return strings.Join(*o, ",") }
func (o *options) Set(v string) error { *o = append(*o, v); return nil }

// run is the `run` command; it returns the exit status (SPEC §6.1: 1 for
// input or evaluation errors, 2 for usage errors, 130 on interrupt).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vertebrae-beam run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o pipeline.Options
	var jsonPath string
	var beamOpts options
	fs.StringVar(&o.Spec, "spec", "", "run file")
	fs.StringVar(&o.Store, "store", "", "artifact store URI reachable from every worker (path, file://, s3://, gs://)")
	fs.IntVar(&o.TotalShards, "total-shards", 1, "extraction shards per endpoint and gallery shards for scoring")
	fs.IntVar(&o.QueryBlock, "query-block", 0, "queries per scoring block (0 = all)")
	fs.StringVar(&o.ShardBy, "shard-by", "contiguous", "gallery shard layout: contiguous or modulo")
	fs.StringVar(&o.ONNXRuntimeLib, "onnxruntime-lib", "", "ONNX Runtime library for ONNX extractors")
	fs.StringVar(&jsonPath, "json", "", "write the JSON report to PATH instead of stdout")
	fs.Var(&beamOpts, "beam-option", "Beam pipeline option key=value (repeatable)")
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "vertebrae-beam: "+format+"\n", a...)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	if o.Spec == "" || o.Store == "" {
		return usageErr("--spec and --store are required")
	}
	if o.TotalShards < 1 {
		return usageErr("--total-shards must be >= 1; got %d", o.TotalShards)
	}
	if o.QueryBlock < 0 {
		return usageErr("--query-block must be >= 0; got %d", o.QueryBlock)
	}
	if o.ShardBy != "contiguous" && o.ShardBy != "modulo" {
		return usageErr("--shard-by must be contiguous or modulo; got %q", o.ShardBy)
	}
	// Beam reads its options from the global flag set; beam.Init must run
	// after they are parsed.
	for _, kv := range beamOpts {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimLeft(k, "-")
		if !ok || k == "" {
			return usageErr("--beam-option %q: want key=value", kv)
		}
		if flag.Lookup(k) == nil {
			return usageErr("--beam-option %q: Beam has no pipeline option %q", kv, k)
		}
		if err := flag.Set(k, v); err != nil {
			return usageErr("--beam-option %q: %v", kv, err)
		}
	}
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	beam.Init()
	runner := "prism"
	if f := flag.Lookup("runner"); f != nil && f.Value.String() != "" {
		runner = f.Value.String()
	}
	if jsonPath != "" {
		if abs, err := filepath.Abs(jsonPath); err == nil {
			jsonPath = abs
		}
	}
	rep, _, err := pipeline.Run(ctx, runner, o)
	if err != nil {
		fmt.Fprintf(stderr, "vertebrae-beam: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	if jsonPath == "" {
		if _, err := stdout.Write(rep); err != nil {
			return 1
		}
		return 0
	}
	if err := writeFile(jsonPath, rep); err != nil {
		fmt.Fprintf(stderr, "vertebrae-beam: %v\n", err)
		return 1
	}
	return 0
}

// writeFile replaces path atomically (temp file, rename), so a failed run
// leaves no partial report (SPEC §6.1).
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

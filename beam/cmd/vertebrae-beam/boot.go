package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
)

// bootArgs reports whether a runner started the binary as a PROCESS
// environment's command: Prism and the portable runners pass
// --id=… --provision_endpoint=… and nothing else a worker gets from its
// boot program (no --worker, no control endpoint).
func bootArgs(args []string) bool {
	for _, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == "worker" || strings.HasPrefix(a, "worker=") {
			return false
		}
	}
	for _, a := range args {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "provision_endpoint") {
			return true
		}
	}
	return false
}

// boot does for this binary what the Go SDK container's boot program does
// before it starts the staged worker binary: it reads the provision info
// (logging and control endpoints, pipeline options, runner capabilities,
// status endpoint) and hands them to the harness through the flags and
// environment the harness reads (package harness/init). The worker then
// runs in this process: the binary is its own worker, so the staged copy
// of it is not fetched. It returns only on error; the caller then runs
// beam.Init, which starts the harness and exits.
func boot(args []string) error {
	fs := flag.NewFlagSet("vertebrae-beam boot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	id := fs.String("id", "", "worker id")
	provision := fs.String("provision_endpoint", "", "provision service endpoint")
	logging := fs.String("logging_endpoint", "", "logging service endpoint (overridden by the provision info)")
	control := fs.String("control_endpoint", "", "control service endpoint (overridden by the provision info)")
	fs.String("artifact_endpoint", "", "artifact service endpoint (unused: the binary is its own worker)")
	semi := fs.String("semi_persist_dir", "/tmp", "semi-persistent directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Prism passes --id='<id>' through exec without a shell, quotes
	// included; the worker pool knows the id without them.
	wid := strings.Trim(*id, `'"`)
	if wid == "" || *provision == "" {
		return fmt.Errorf("--id and --provision_endpoint are required; got %q", args)
	}
	ctx := grpcx.WriteWorkerID(context.Background(), wid)
	info, err := tools.ProvisionInfo(ctx, *provision)
	if err != nil {
		return fmt.Errorf("provision info from %s: %w", *provision, err)
	}
	if u := info.GetLoggingEndpoint().GetUrl(); u != "" {
		*logging = u
	}
	if u := info.GetControlEndpoint().GetUrl(); u != "" {
		*control = u
	}
	if *logging == "" || *control == "" {
		return fmt.Errorf("the provision info names no logging or control endpoint")
	}
	options, err := tools.ProtoToJSON(info.GetPipelineOptions())
	if err != nil {
		return fmt.Errorf("pipeline options: %w", err)
	}
	if u := info.GetStatusEndpoint().GetUrl(); u != "" {
		os.Setenv("STATUS_ENDPOINT", u)
	}
	if caps := info.GetRunnerCapabilities(); len(caps) > 0 {
		os.Setenv("RUNNER_CAPABILITIES", strings.Join(caps, " "))
	}
	for k, v := range map[string]string{
		"worker": "true", "id": wid, "logging_endpoint": *logging, "control_endpoint": *control,
		"semi_persist_dir": *semi, "options": options,
	} {
		if err := flag.Set(k, v); err != nil {
			return fmt.Errorf("harness flag --%s: %w", k, err)
		}
	}
	return nil
}

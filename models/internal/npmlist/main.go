// Command npmlist prints, one per line, each registered preparer's pinned
// npm package and the tarball file name `npm pack` writes for it, separated
// by a tab. .ci/run uses it to fetch exactly the tarballs `vertebrae models
// prepare` reads.
package main

import (
	"fmt"

	"github.com/vertebrae-eval/vertebrae/models"
)

func main() {
	for _, p := range models.Registry {
		fmt.Printf("%s\t%s\n", p.Package, models.TarballName(p.Package))
	}
}

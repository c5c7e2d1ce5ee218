// Command gen writes the tiny ONNX test models, tokenizers, processor
// configurations and images of extract/onnx/testdata. It is run by
// go generate in extract/onnx/internal/tinymodels.
package main

import (
	"flag"
	"log"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/internal/tinymodels"
)

func main() {
	out := flag.String("out", "../../testdata", "testdata directory to write")
	flag.Parse()
	if err := tinymodels.WriteAll(*out); err != nil {
		log.Fatal(err)
	}
}

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

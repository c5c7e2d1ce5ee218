module github.com/vertebrae-eval/vertebrae

go 1.26.8

require (
	github.com/mmcloughlin/avo v0.6.0
	github.com/spf13/cobra v1.10.2
	github.com/x448/float16 v0.8.4
	golang.org/x/sys v0.50.0
)

require (
	github.com/apache/arrow-go/v18 v18.8.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)

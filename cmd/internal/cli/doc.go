// Package cli is the vertebrae command line behind cmd/vertebrae (SPEC §6),
// the front of the data flow: cobra commands that parse flags and run files,
// load inputs through runspec, drive evaluate, compare, the distributed
// stages and the artifact store, and write reports through report. It maps
// errors to the exit codes of SPEC §6.1.
package cli

// Package runspec is the first step of a run: it reads the declarative run
// file of `vertebrae retrieval run --spec` (SPEC §6.5) and loads it (Open,
// Session), reading the dataset through formats/files (LoadDataset, which
// the CLI's flags path shares) and building the extractors. The CLI and the
// Beam module load run files through it.
//
// The file is YAML (JSON is accepted, being YAML); it is decoded through
// yaml.Node so that every error names "<path>:<line>". Unknown keys fail
// everywhere, relative paths resolve against the run file's directory, and
// the retrieval, memory and compression sections are built by the
// constructors of their own packages.
package runspec

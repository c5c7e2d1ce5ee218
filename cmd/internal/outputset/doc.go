// Package outputset commits a command's output files as one set (SPEC §6.1),
// the last step of the CLI and the C ABI once the reports are rendered:
// every output is written in full to a temporary file next to its target and
// synced; only when all are complete are they renamed into place. On any
// failure nothing is created or replaced: temporary files, and directories
// created for the outputs, are removed again.
//
// Targets are checked before any work (Check): an output may not be an
// existing directory (unless a directory is expected), may not sit below a
// path component that is a file, two outputs may not name the same file and
// no output may name an input (device and inode after resolving symlinks).
// A target that exists and is not a regular file (/dev/null, a FIFO, a
// character device) is written directly, never renamed over; a symlink is
// resolved and the file it points to is replaced (the link stays a link).
//
// Usage:
//
//	var s outputset.Set
//	s.Input(queriesPath, qrelsPath)          // files the outputs must not overwrite
//	s.Add("--json", jsonPath, fillJSON)      // one call per output
//	if err := s.Check(); err != nil { ... }  // before the work: a *TargetError
//	... do the work ...
//	err := s.Commit(ctx)                     // all or nothing
package outputset

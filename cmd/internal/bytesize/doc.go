// Package bytesize parses the byte counts people type for memory budgets
// (--max-memory-bytes 4G) into the int64 budgets that the CLI (package cli)
// and the C ABI (package capi) hand to a run, so a flag never answers with a
// strconv message.
package bytesize

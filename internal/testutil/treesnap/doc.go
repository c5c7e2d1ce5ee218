// Package treesnap is a test helper of the CLI and its output writer that
// records a directory tree, for tests that must show a failed command
// created, replaced or left nothing (SPEC §6.1): every path with its file
// content, link target or kind.
package treesnap

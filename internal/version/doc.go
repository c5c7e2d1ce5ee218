// Package version records the release this build reports, in the CLI and
// C ABI and in the metadata of results and artifacts.
package version

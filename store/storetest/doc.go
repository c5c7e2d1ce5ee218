// Package storetest is the conformance suite every store.Store backend
// passes (SPEC §10.5), plus the environment contract for tests that need a
// real S3-compatible server (S3URIForTest). It is imported only by tests:
// those of the backends, the artifact layer and the CLI.
package storetest

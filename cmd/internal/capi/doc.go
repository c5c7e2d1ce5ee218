// Package capi is the in-memory evaluation behind the C ABI of
// cmd/libvertebrae (and so the Python package), the counterpart of package
// cli for callers that already hold embeddings: a JSON request and
// caller-owned embedding arrays go in, through evaluate, compare and the
// report writers, and the JSON report of `vertebrae retrieval run` comes out,
// with the CLI's checks, defaults and messages. It holds no cgo: the exported
// C functions only convert their arguments and call it.
package capi

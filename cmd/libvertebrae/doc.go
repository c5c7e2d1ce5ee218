// Command libvertebrae is the C ABI of vertebrae, a shared library for the
// Python package (python/) and any other C caller whose exported functions
// convert their arguments and call the in-memory evaluation of package capi
// (cmd/internal/capi). Build it with:
//
//	go build -buildmode=c-shared -o libvertebrae.so ./cmd/libvertebrae
//
// Every function that works returns a code (0 ok, 1 input, 2 usage,
// 3 memory budget, 4 cancelled, 5 internal) and sets *out to a string the
// caller frees with vt_free: the result on success, the message otherwise.
// Embedding arrays are read in place, never copied when their rows are
// contiguous; they must stay valid and unchanged until the call returns.
// A call runs under a handle from vt_call_new that vt_call_cancel, from any
// thread, cancels. docs/python.md documents the functions.
package main

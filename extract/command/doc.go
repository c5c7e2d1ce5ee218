// Package command implements the `command` extractor (SPEC §9.4), one of the
// extractor backends that runspec builds from a run file: an external
// program, run without a shell once per batch, serves as the embedding
// backbone. It receives the batch's rows as JSON Lines on stdin and writes one
// embedding per row to stdout, as JSON Lines or as a .npy stream. This lets
// people evaluate a model written in any language (typically a Python script)
// without writing Go.
//
// Protocol, per batch:
//
//   - environment: the parent's, then Config.Env, then VERTEBRAE_SIDE
//     ("query" or "gallery"), VERTEBRAE_BRANCH ("default" unless a branch is
//     encoded) and VERTEBRAE_MODALITY;
//   - stdin: one object per row, e.g.
//     {"index":0,"id":"q0","side":"query","modality":"text","value":"a cat","text":"a cat"}
//     where index is the row's index in the endpoint, value is the text, the
//     absolute image path or the vector, and text/path/vector repeat whichever
//     of the item's fields are set;
//   - stdout: either JSON Lines, one array of numbers (or {"embedding": [...]})
//     per row in input order, or a single 2-D float .npy array (detected by its
//     magic bytes unless Config.Output pins the format).
//
// With Config.Persistent (run-file `persistent: true`) the program is started
// once per branch and kept for the whole run, so a model loads its weights
// once: each batch is one request line {"batch": n, "rows": [row objects as
// above]} on its stdin, answered by one line {"batch": n, "embeddings":
// [[...], ...]} or {"batch": n, "error": "message"} on its stdout; n counts
// the process's requests from 0. Close (or Shutdown) closes its stdin and
// waits for it to exit 0. See persistent.go and docs/command-extractor.md;
// worker/worker.py is a Python template (PythonWorkerTemplate).
package command

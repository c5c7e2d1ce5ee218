package command

import _ "embed"

// PythonWorkerTemplate is worker/worker.py: a persistent worker (stdlib and
// numpy) whose encode(texts) function a user replaces with a real model,
// such as sentence-transformers' model.encode. Run it with
// `command: [python3, worker.py]` and `persistent: true`.
//
//go:embed worker/worker.py
var PythonWorkerTemplate string

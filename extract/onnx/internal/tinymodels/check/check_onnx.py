"""Runs onnx.checker.check_model (full_check) on every tiny model.

Development-time check, not run by go test:

    /usr/bin/python3 extract/onnx/internal/tinymodels/check/check_onnx.py extract/onnx/testdata
"""

import glob
import os
import sys

import onnx

root = sys.argv[1] if len(sys.argv) > 1 else "extract/onnx/testdata"
paths = sorted(glob.glob(os.path.join(root, "**", "*.onnx"), recursive=True))
if not paths:
    sys.exit("no .onnx files under " + root)
for path in paths:
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print("ok", os.path.relpath(path, root), "ir", model.ir_version,
          "opset", [(o.domain or "ai.onnx", o.version) for o in model.opset_import])
print(f"PASS: {len(paths)} models checked")

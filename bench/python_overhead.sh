#!/usr/bin/env bash
# The Python API against the CLI and numpy (issue #29), with numpy's best
# OpenBLAS kernel: bash bench/python_overhead.sh [--rounds N] [--queries Q --gallery G --dim D]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "$ROOT/bench/python_overhead.py" "$@"

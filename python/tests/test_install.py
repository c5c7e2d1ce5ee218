"""`pip install --no-build-isolation` of the package into a fresh
--system-site-packages venv (no index: nothing comes from PyPI) builds the Go
library with the package, and `import vertebrae` there evaluates."""

import os
import shutil
import subprocess
import sys

from conftest import PYTHON_DIR, REPO


def test_pip_install_into_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # a copy of python/ (the checkout stays clean); the Go sources via VERTEBRAE_GO_SOURCE
    src = tmp_path / "python"
    shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__", "*.so", "*.h"))
    env = {k: v for k, v in os.environ.items() if k not in ("VERTEBRAE_LIB", "PYTHONPATH")}
    env["VERTEBRAE_GO_SOURCE"] = REPO
    p = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", str(src)],
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    code = ("import numpy as np, vertebrae\n"
            "assert vertebrae.library_path().startswith(vertebrae.__path__[0]), vertebrae.library_path()\n"
            "rng = np.random.default_rng(0)\n"
            "g = rng.standard_normal((20, 8)).astype(np.float32)\n"
            "r = vertebrae.evaluate(g[:4] + 0.01, g, qrels={i: {i: 1} for i in range(4)}, k=(1, 5), primary=\"recall@1\")\n"
            "print(vertebrae.__file__)\n"
            "print(r.metrics['recall@1'])\n")
    p = subprocess.run([py, "-c", code], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    where, recall = p.stdout.split()
    assert where.startswith(str(venv)) and float(recall) == 1.0

"""Shared fixtures: the package from this checkout (python/ on sys.path), the
Go library and the CLI built once per session (or $VERTEBRAE_LIB and
$VERTEBRAE_CLI), and helpers that run the CLI on files."""

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.environ.get("VERTEBRAE_GO_SOURCE") or os.path.dirname(PYTHON_DIR)

# VERTEBRAE_REQUIRE_PYTHON_PACKAGE=1 (CI, after `pip install ./python`): the
# installed package with its own library is tested, never the source tree.
# Otherwise the package of this checkout is tested with a library built here
# (or $VERTEBRAE_LIB).
INSTALLED = os.environ.get("VERTEBRAE_REQUIRE_PYTHON_PACKAGE") == "1"


def _same(a, b):
    try:
        return os.path.samefile(a or ".", b)
    except OSError:
        return False


if INSTALLED:
    sys.path[:] = [p for p in sys.path if not _same(p, PYTHON_DIR)]
    os.environ.pop("VERTEBRAE_LIB", None)
elif PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

_BUILD_DIR = tempfile.mkdtemp(prefix="vertebrae-pytest-")


def pytest_configure(config):
    if INSTALLED:
        import vertebrae
        where = os.path.dirname(os.path.abspath(vertebrae.__file__))
        assert not where.startswith(PYTHON_DIR + os.sep), f"testing the source tree {where}, not the installed package"
        assert os.path.exists(vertebrae.library_path()), vertebrae.library_path()
        return
    # The library must be known before the first vertebrae call of any test.
    if not os.environ.get("VERTEBRAE_LIB"):
        lib = os.path.join(_BUILD_DIR, "libvertebrae.so")
        subprocess.run(["go", "build", "-buildmode=c-shared", "-o", lib, "./cmd/libvertebrae"],
                       cwd=REPO, env=dict(os.environ, CGO_ENABLED="1"), check=True)
        os.environ["VERTEBRAE_LIB"] = lib


def pytest_unconfigure(config):
    import shutil
    shutil.rmtree(_BUILD_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def cli():
    """Path of the vertebrae CLI."""
    path = os.environ.get("VERTEBRAE_CLI")
    if path:
        return path
    path = os.path.join(_BUILD_DIR, "vertebrae")
    if not os.path.exists(path):
        subprocess.run(["go", "build", "-o", path, "./cmd/vertebrae"], cwd=REPO, check=True)
    return path


@pytest.fixture(scope="session")
def child_env():
    """Environment of a child Python that imports the package under test
    (run it with cwd=CHILD_CWD so that no source tree shadows it)."""
    env = dict(os.environ)
    if not INSTALLED:
        env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


CHILD_CWD = _BUILD_DIR


_RUNTIME = re.compile(r'"(extraction_seconds|scoring_seconds)": [-+0-9.eE]+')


def normalize(text):
    """The report text with its only run-dependent numbers (runtime seconds) zeroed."""
    return _RUNTIME.sub(lambda m: f'"{m.group(1)}": 0', text)


def normalized(report):
    """A parsed report with the runtime seconds zeroed."""
    return json.loads(normalize(json.dumps(report)))


def assert_same_report(result, cli_text):
    """The Python result equals the CLI's JSON: parsed (exactly), and as bytes
    (both with the runtime seconds zeroed)."""
    assert normalized(result.report) == normalized(json.loads(cli_text))
    assert normalize(result.to_json()) == normalize(cli_text)


class CLI:
    def __init__(self, path, workdir):
        self.path, self.dir = path, workdir

    def file(self, name, lines):
        p = os.path.join(self.dir, name)
        with open(p, "w", encoding="utf-8") as f:
            f.write("".join(f"{x}\n" for x in lines))
        return p

    def npy(self, name, array):
        import numpy as np
        p = os.path.join(self.dir, name)
        np.save(p, array)
        return p

    def run(self, *args, cmd=("retrieval", "run"), expect=0):
        out = os.path.join(self.dir, "cli-report.json")
        if os.path.exists(out):
            os.remove(out)
        p = subprocess.run([self.path, *cmd, *map(str, args), "--quiet", "--json", out],
                           capture_output=True, text=True)
        assert p.returncode == expect, p.stderr
        if expect != 0:
            return p.stderr
        with open(out, encoding="utf-8") as f:
            return f.read()


@pytest.fixture
def run_cli(cli, tmp_path):
    return CLI(cli, str(tmp_path))

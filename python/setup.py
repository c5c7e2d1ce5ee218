"""Builds the Go shared library (libvertebrae) into the package.

The build step runs, in the repository root (the parent of this directory,
or $VERTEBRAE_GO_SOURCE):

    go build -buildmode=c-shared -trimpath -o <build_lib>/vertebrae/libvertebrae.so ./cmd/libvertebrae

so `pip install --no-build-isolation ./python` needs Go and a C compiler (cgo)
but no network beyond what `go build` itself needs (none with a filled module
cache). $GO names the go binary (default: go on PATH).
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_NAME = {"darwin": "libvertebrae.dylib", "win32": "vertebrae.dll"}.get(sys.platform, "libvertebrae.so")


def go_source():
    src = os.environ.get("VERTEBRAE_GO_SOURCE") or os.path.dirname(HERE)
    if not os.path.isdir(os.path.join(src, "cmd", "libvertebrae")):
        sys.exit(
            f"vertebrae: no Go sources at {src} (cmd/libvertebrae missing); "
            "install from a clone of the repository or set VERTEBRAE_GO_SOURCE to its root"
        )
    return src


class BuildPyWithGo(build_py):
    """build_py, then the Go library into build_lib/vertebrae/."""

    def run(self):
        super().run()
        out = os.path.join(os.path.abspath(self.build_lib), "vertebrae", LIB_NAME)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        go = os.environ.get("GO") or shutil.which("go")
        if not go:
            sys.exit("vertebrae: the Go toolchain (go) is needed to build libvertebrae; see docs/python.md")
        env = dict(os.environ, CGO_ENABLED="1")
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./cmd/libvertebrae"]
        print("vertebrae: " + " ".join(cmd), flush=True)
        subprocess.check_call(cmd, cwd=go_source(), env=env)
        header = os.path.splitext(out)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)

    def get_outputs(self, include_bytecode=1):
        out = super().get_outputs(include_bytecode)
        return out + [os.path.join(self.build_lib, "vertebrae", LIB_NAME)]


class BinaryDistribution(Distribution):
    """The wheel holds a native library: platform-specific, not pure."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithGo}
try:
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):
        """py3-none-<platform>: ctypes needs no particular Python ABI."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)

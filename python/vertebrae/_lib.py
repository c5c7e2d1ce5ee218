"""Loading of the Go shared library (libvertebrae) and one cancellable call."""

import ctypes
import os
import signal
import sys
import threading

from . import errors

_LIB_NAMES = {"darwin": "libvertebrae.dylib", "win32": "vertebrae.dll"}
LIB_NAME = _LIB_NAMES.get(sys.platform, "libvertebrae.so")

_lock = threading.Lock()
_lib = None

# SIGINT (and SIGTERM) are kept away from the Go runtime's threads: the
# library is loaded by a thread that blocks them, so the Go runtime records
# that mask at start-up and every thread it creates inherits it; the worker
# thread that runs a call blocks them too. The kernel then delivers Ctrl-C to
# the Python main thread, whose handler raises KeyboardInterrupt there.
_BLOCKED = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


def _block_signals():
    if hasattr(signal, "pthread_sigmask") and _BLOCKED:
        signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)


def library_path():
    """The shared library used: $VERTEBRAE_LIB, else the one installed in the package."""
    env = os.environ.get("VERTEBRAE_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), LIB_NAME)


def _open(path):
    box = {}

    def load():
        try:
            _block_signals()
            box["lib"] = ctypes.CDLL(path)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["exc"] = e

    t = threading.Thread(target=load, name="vertebrae-load")
    t.start()
    t.join()
    if "exc" in box:
        e = box["exc"]
        if isinstance(e, OSError):
            raise ImportError(
                f"vertebrae: cannot load the Go library {path}: {e} "
                "(install the package with `pip install --no-build-isolation ./python`, "
                "or point $VERTEBRAE_LIB at a libvertebrae built with "
                "`go build -buildmode=c-shared -o libvertebrae.so ./cmd/libvertebrae`)"
            ) from e
        raise e
    lib = box["lib"]
    u64, i64, i32, vp = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p
    out = ctypes.POINTER(ctypes.c_void_p)
    lib.vt_call_new.argtypes = []
    lib.vt_call_new.restype = u64
    lib.vt_call_cancel.argtypes = [u64]
    lib.vt_call_cancel.restype = None
    lib.vt_call_free.argtypes = [u64]
    lib.vt_call_free.restype = None
    lib.vt_evaluate.argtypes = [
        u64, ctypes.c_char_p,
        vp, i64, i64, i64, i32,
        vp, i64, i64, i64, i32,
        vp, i64, i64,
        out,
    ]
    lib.vt_evaluate.restype = i32
    for fn in (lib.vt_compare, lib.vt_render):
        fn.argtypes = [u64, ctypes.c_char_p, out]
        fn.restype = i32
    lib.vt_result_take.argtypes = [u64]
    lib.vt_result_take.restype = u64
    lib.vt_result_free.argtypes = [u64]
    lib.vt_result_free.restype = None
    lib.vt_free.argtypes = [vp]
    lib.vt_free.restype = None
    lib.vt_version.argtypes = []
    lib.vt_version.restype = vp
    return lib


def lib():
    """The loaded library (loaded once per process)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _open(library_path())
    return _lib


def _take(l, p):
    """The UTF-8 string at p, freed with vt_free."""
    if not p:
        return ""
    try:
        return ctypes.string_at(p).decode("utf-8")
    finally:
        l.vt_free(p)


def version():
    """The Go library's version string."""
    l = lib()
    return _take(l, l.vt_version())


def free_result(handle):
    """Releases a result handle of vt_result_take (a Result's finalizer)."""
    if handle and _lib is not None:
        _lib.vt_result_free(handle)


def call(name, *args, keep_result=False):
    """Runs lib.<name>(call, *args, &out) in a worker thread (ctypes releases
    the GIL while Go runs) and returns out's text; a return code other than 0
    raises the matching vertebrae.Error. Ctrl-C in the main thread cancels the
    Go call, waits for it to stop and re-raises KeyboardInterrupt. With
    keep_result it returns (text, handle): the handle of the evaluation's
    benchmark held in Go (vt_result_take), which renders the figures the JSON
    report has no data for; free it with free_result."""
    l = lib()
    fn = getattr(l, name)
    handle = l.vt_call_new()
    out = ctypes.c_void_p()
    box = {}
    # "done" is released by the worker when the Go call has returned. It is
    # waited for with a plain lock, not Thread.join: a KeyboardInterrupt
    # inside Thread.join (Python <= 3.12) can mark a running thread as
    # stopped, and the arrays must stay alive until Go has returned.
    done = threading.Lock()
    done.acquire()

    def work():
        try:
            _block_signals()
            box["code"] = fn(handle, *args, ctypes.byref(out))
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["exc"] = e
        finally:
            done.release()

    worker = threading.Thread(target=work, name="vertebrae-" + name, daemon=True)
    interrupted = None
    started = returned = False
    try:
        worker.start()
        started = True
        try:
            while not returned:
                returned = done.acquire(timeout=0.25)
        except KeyboardInterrupt as e:
            interrupted = e
            l.vt_call_cancel(handle)
            while not returned:
                try:
                    returned = done.acquire()
                except KeyboardInterrupt:
                    pass  # a second Ctrl-C: the cancellation is already under way
    finally:
        if started and not returned:
            # another exception while waiting: still wait until Go has returned
            l.vt_call_cancel(handle)
            done.acquire()
        text = _take(l, out.value)
        kept = l.vt_result_take(handle) if keep_result and returned and box.get("code") == 0 else 0
        l.vt_call_free(handle)
    if "exc" in box:
        raise box["exc"]
    if interrupted is not None:
        raise interrupted
    code = box.get("code", 5)
    if code != 0:
        raise errors.from_code(code, text)
    if keep_result:
        return text, kept
    return text

"""Process-level behaviour, each in a child Python: zero-copy (peak RSS) and
Ctrl-C (KeyboardInterrupt, the Go work stopped within 1 s)."""

import os
import signal
import subprocess
import sys
import time

from conftest import CHILD_CWD

RSS_CHILD = r"""
import resource, sys
import numpy as np
import vertebrae
N, D, NQ = 1_400_000, 384, 8          # 2.15 GB of float32
g = np.empty((N, D), dtype=np.float32)  # Python holds the gallery once,
rng = np.random.default_rng(0)          # filled in place, chunk by chunk
for i in range(0, N, 65536):
    rng.standard_normal(out=g[i:i + 65536], dtype=np.float32)
q = g[:NQ] + 0.1 * rng.standard_normal((NQ, D), dtype=np.float32)
r = vertebrae.evaluate(q, g, qrels=[(i, i, 1) for i in range(NQ)], similarity=sys.argv[1])
assert r.metrics["recall@1"] == 1.0, r.metrics
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
print("PEAK", peak, g.nbytes, flush=True)
"""


def test_zero_copy_peak_rss(child_env):
    for sim in ("cosine", "dot"):
        p = subprocess.run([sys.executable, "-c", RSS_CHILD, sim], env=child_env, cwd=CHILD_CWD, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        line = [l for l in p.stdout.splitlines() if l.startswith("PEAK")][-1]
        peak, nbytes = map(int, line.split()[1:])
        assert nbytes > 2_000_000_000
        assert peak < 1.3 * nbytes, f"{sim}: peak RSS {peak} bytes for a {nbytes}-byte gallery ({peak / nbytes:.2f}x)"


# Q = G = 200,000 × D = 256 float32 (cosine, float64 protocol): about a
# minute on 2 cores (4,000 queries take 1.1-1.4 s here), interrupted after 2 s.
INTERRUPT_CHILD = r"""
import os, sys, time
import numpy as np
import vertebrae
Q, G, D = 200_000, 200_000, 256
rng = np.random.default_rng(0)
g = rng.standard_normal((G, D), dtype=np.float32)
q = rng.standard_normal((Q, D), dtype=np.float32)
qrels = [(i, i, 1) for i in range(Q)]
print("READY", flush=True)
t0 = time.time()
try:
    vertebrae.evaluate(q, g, qrels=qrels, per_query=False)
    print("FINISHED", time.time() - t0, flush=True)
    sys.exit(1)
except KeyboardInterrupt:
    print("INTERRUPTED", repr(time.time()), flush=True)
# the call has really returned: the arrays may go (Go must not read them any more)
r = vertebrae.evaluate(g[:5], g[:50], qrels=[(i, i, 1) for i in range(5)])
del q, g, qrels
import gc; gc.collect()
# and the Go work has stopped: (almost) no CPU used in the next second
c0 = sum(os.times()[:2])
time.sleep(1)
print("CPU", sum(os.times()[:2]) - c0, flush=True)
# and the library still worked after the interrupt
print("AFTER", r.metrics["recall@1"], flush=True)
"""


def test_keyboard_interrupt_stops_go_within_one_second(child_env):
    p = subprocess.Popen([sys.executable, "-c", INTERRUPT_CHILD], env=child_env, cwd=CHILD_CWD, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY", p.stderr.read()
        time.sleep(2)
        assert p.poll() is None
        sent = time.time()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().split()
        got = time.time()
        assert line and line[0] == "INTERRUPTED", (line, p.stderr.read())
        assert float(line[1]) - sent < 1.0, f"KeyboardInterrupt {float(line[1]) - sent:.3f} s after SIGINT"
        assert got - sent < 1.5
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    lines = dict(l.split(None, 1) for l in out.splitlines())
    assert float(lines["CPU"]) < 0.3, f"{lines['CPU']} s of CPU in the second after the interrupt"
    assert float(lines["AFTER"]) == 1.0


def test_interrupt_before_any_call_is_plain_python(child_env):
    # Loading the library leaves Python's own SIGINT handling alone.
    code = ("import signal, os, time, vertebrae\n"
            "vertebrae.version()\n"
            "try:\n"
            "    os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
            "except KeyboardInterrupt:\n"
            "    print('OK')\n")
    p = subprocess.run([sys.executable, "-c", code], env=child_env, cwd=CHILD_CWD, capture_output=True, text=True, timeout=30)
    assert p.stdout.strip() == "OK", p.stderr


def test_gil_released_and_threads():
    import threading

    import numpy as np

    import vertebrae
    from conftest import normalize

    rng = np.random.default_rng(0)
    g = rng.standard_normal((60_000, 128), dtype=np.float32)
    q = g[:2000] + rng.standard_normal((2000, 128), dtype=np.float32)
    qrels = [(i, i, 1) for i in range(2000)]
    ticks = []
    stop = threading.Event()

    def ticker():  # runs only if the GIL is free while Go works
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    t0 = time.perf_counter()
    want = vertebrae.evaluate(q, g, qrels=qrels, threads=1)
    dt = time.perf_counter() - t0
    stop.set()
    t.join()
    assert len(ticks) > 0.3 * dt / 0.0011, (len(ticks), dt)
    # two calls from two threads at once give the sequential results
    out = {}

    def one(i):
        out[i] = vertebrae.evaluate(q[i::2], g, qrels=[(j, 2 * j + i, 1) for j in range(len(q[i::2]))], threads=1)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i in range(2):
        seq = vertebrae.evaluate(q[i::2], g, qrels=[(j, 2 * j + i, 1) for j in range(len(q[i::2]))], threads=1)
        assert normalize(out[i].to_json()) == normalize(seq.to_json())
    assert want.metrics["recall@10"] > 0

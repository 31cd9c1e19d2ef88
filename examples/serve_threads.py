"""Serve one scripted MLP from N Python threads and print the throughput per thread count.

A scripted call is one Numba `njit(nogil=True)` program, so the GIL is released for the whole
forward pass and N threads use N cores. BLAS is pinned to one thread per caller
(`jitorch.set_num_threads(1)` where available, else threadpoolctl) so threads do not
oversubscribe the cores. Timing starts once the compiled program is ready
(`jitorch.jit.wait_compiled()`: a first run compiles it in a background worker while the first
call runs interpreted); the last line says which tier served the calls (`jitorch.jit.stats()`).

    python examples/serve_threads.py [--batch B] [--seconds S] [--threads 1 2 4]
"""
import argparse
import os
import threading
import time

import jitorch


@jitorch.script
def mlp(x, w1, b1, w2, b2, w3, b3):
    h = jitorch.clamp(x @ w1 + b1, min=0.0)
    h = jitorch.clamp(h @ w2 + b2, min=0.0)
    return h @ w3 + b3


def make_params(sizes=(784, 256, 256, 10)):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [jitorch.randn(a, b) * a ** -0.5, jitorch.zeros(b)]
    return params


def pin_one_thread():
    if hasattr(jitorch, "set_num_threads"):
        jitorch.set_num_threads(1)
        return
    try:
        import scipy.linalg  # noqa: F401  (SciPy's OpenBLAS is the one Numba's np.dot calls)
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass


def throughput(fn, args, n_threads: int, seconds: float) -> float:
    """Calls per second of `fn(*args)` from `n_threads` threads for about `seconds`."""
    counts = [0] * n_threads
    start = threading.Barrier(n_threads + 1)
    stop = threading.Event()

    def worker(k):
        start.wait()
        while not stop.is_set():
            fn(*args)
            counts[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main(batch: int = 32, seconds: float = 1.0, thread_counts=(1, 2, 4)) -> dict:
    pin_one_thread()
    jitorch.manual_seed(0)
    x = jitorch.randn(batch, 784)
    args = (x, *make_params())
    mlp(*args)  # the first call starts the compile
    jitorch.jit.wait_compiled()  # time the compiled program, not the interpreter
    print(f"MLP 784-256-256-10, batch {batch}, {os.cpu_count()} cores")
    results = {}
    for n in thread_counts:
        results[n] = throughput(mlp, args, n, seconds)
        print(f"threads {n}: {results[n]:9.1f} calls/s  "
              f"({results[n] / results[thread_counts[0]]:.2f}x of {thread_counts[0]} thread)")
    print(jitorch.jit.stats().calls_by_tier())
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    a = ap.parse_args()
    main(a.batch, a.seconds, tuple(a.threads))

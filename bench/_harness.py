"""Shared timing harness for bench/: best-of-N wall-clock per call, and optional peers.

Peers are imported only if installed (PyTorch, JAX); they are never dependencies of jitorch.
"""
from __future__ import annotations

import platform
import time
import timeit


def per_call(fn, min_time: float = 0.5, repeat: int = 9) -> float:
    """Seconds per call: best of `repeat` runs, each long enough to be measurable."""
    fn()  # warm up (allocations, caches, first-call paths)
    n = 1
    while True:
        t = timeit.timeit(fn, number=n)
        if t >= min_time / repeat or n >= 1 << 22:
            break
        n *= 4
    return min(timeit.repeat(fn, number=n, repeat=repeat)) / n


def interleaved(fns: dict, rounds: int = 5, min_time: float = 0.1) -> dict:
    """Seconds per call for each of `fns`, measured in alternating rounds (best of rounds), so
    that drift of a shared, noisy machine hits every peer alike."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            best[k] = min(best[k], per_call(f, min_time=min_time, repeat=3))
    return best


def try_import(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def machine() -> str:
    import os
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
           f"Python {platform.python_version()}"


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def fmt_us(s: float) -> str:
    return f"{s * 1e6:.2f}" if s < 1e-3 else f"{s * 1e6:.0f}"

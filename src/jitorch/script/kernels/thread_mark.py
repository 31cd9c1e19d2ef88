"""`ThreadMark`: a per-thread, nestable "this thread is inside X" flag.

The kernels package patches a few Numba hooks that must behave differently while the current
thread loads a program module, loads cached overloads or compiles generated code (and only
then: another thread's compile is Numba's own). Each such state is one ThreadMark: entered as a
context manager (nestable: a load inside a load), read through `active`.
"""
from __future__ import annotations

import threading

__all__ = ["ThreadMark"]


class ThreadMark:
    """A per-thread nesting counter (see the module doc)."""

    __slots__ = ("_local",)

    def __init__(self):
        self._local = threading.local()

    @property
    def active(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def __enter__(self):
        self._local.depth = getattr(self._local, "depth", 0) + 1
        return self

    def __exit__(self, *exc) -> None:
        self._local.depth -= 1

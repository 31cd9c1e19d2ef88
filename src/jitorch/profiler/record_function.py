"""`record_function`: a named range in the profile, as a context manager or a decorator.

With no active profiler it records nothing (one check). Inside `@jitorch.script` code
`with jitorch.profiler.record_function("name"):` is a marker: the frontend compiles the body as
if the `with` were not there and lists the name in the graph (`graph.profile_markers`); each
profiled call of the scripted function then records the marker as a range inside the call's
range (a compiled program has no ranges of its own; see `_collector.py`).
"""
from __future__ import annotations

import functools

from .. import _profiling


class record_function:
    """`with record_function("step"):` or `@record_function("step")`: a "user_annotation"
    range named `name` (`args`: an optional string shown with it)."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, not {type(name).__name__}")
        self.name = name
        self.args = args
        self._open: list = []  # (collector, event) per nested entry (a decorator re-enters)

    def __enter__(self):
        c = _profiling.collector[0]
        if c is not None:
            ev = c.begin(self.name, "user_annotation",
                         stack=c.user_stack() if c.with_stack else None)
            if self.args is not None:
                ev.args["args"] = self.args
            self._open.append((c, ev))
        else:
            self._open.append(None)
        return self

    def __exit__(self, *exc):
        opened = self._open.pop() if self._open else None
        if opened is not None:
            opened[0].end(opened[1])
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper

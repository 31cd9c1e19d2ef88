"""The pass pipeline: runs the IR passes in order on a copy of a (specialised) graph.

Owns `PIPELINE`, the passes every compiled graph goes through, in order, as the functions
themselves (each Graph -> Graph, rewriting in place or returning a new graph), and
`run(graph, passes=PIPELINE, verify_each=None) -> Graph`. `passes` may also name passes (`"dce"`:
a pass's name is its module's, `verify` for the verifier) or hold any callable Graph -> Graph.
`run` clones the graph once and lets each pass rewrite that copy, so the caller's graph is never
modified. An unknown name is an error (no pass is skipped silently).

Environment: `JITORCH_DUMP=1` prints the graph before the passes and after each one, with the
pass's time, to stderr; `JITORCH_VERIFY=1` (or `verify_each=True`) runs the verifier after every
pass and names the pass that broke an invariant.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, Iterable

from .. import ir
from ..ir.util import clone_graph
from ..ir.verify import VerifyError, verify
from . import cse, dce, fuse, inline, no_grad_marks, simplify

PIPELINE: tuple = (inline.run, simplify.run, cse.run, no_grad_marks.run, dce.run, fuse.run,
                   verify)


def name_of(p: Callable) -> str:
    """A pass's name: its module's (`dce`), `verify` for the verifier."""
    if p is verify:
        return "verify"
    return getattr(p, "__module__", "").rsplit(".", 1)[-1]


NAMES: tuple = tuple(name_of(p) for p in PIPELINE)
_BY_NAME = dict(zip(NAMES, PIPELINE))
# what the autodiff runtime runs before it differentiates: autodiff wants plain nodes (no fused
# groups) and reads the no_grad write markers
BEFORE_AUTODIFF: tuple = tuple(p for p in PIPELINE if name_of(p) not in ("no_grad_marks", "fuse"))


def get_pass(p) -> tuple[str, Callable]:
    """(name, function) of a pass given by name or as a callable."""
    if callable(p):
        if p in PIPELINE:
            return name_of(p), p
        return getattr(p, "__module__", "").rsplit(".", 1)[-1] + "." + \
            getattr(p, "__name__", "pass"), p
    if p not in _BY_NAME:
        raise ValueError(f"unknown pass {p!r} (known: {', '.join(sorted(_BY_NAME))})")
    return p, _BY_NAME[p]


def run(graph: ir.Graph, passes: Iterable = PIPELINE, verify_each: bool | None = None
        ) -> ir.Graph:
    """Run `passes` in order on a copy of `graph` and return the result."""
    dump = os.environ.get("JITORCH_DUMP", "") not in ("", "0")
    if verify_each is None:
        verify_each = os.environ.get("JITORCH_VERIFY", "") not in ("", "0")
    g = clone_graph(graph)
    if dump:
        _dump(g, "before passes", None)
    for p in passes:
        name, fn = get_pass(p)
        t0 = time.perf_counter()
        out = fn(g)
        dt_ms = (time.perf_counter() - t0) * 1e3
        if out is not None:
            g = out
        if verify_each and name != "verify":
            try:
                verify(g)
            except VerifyError as e:
                raise VerifyError(f"after pass {name}: {e}") from None
        if dump:
            _dump(g, f"after {name}", dt_ms)
    return g


def _dump(g: ir.Graph, title: str, ms: float | None) -> None:
    t = "" if ms is None else f" ({ms:.3f} ms)"
    sys.stderr.write(f"--- JITORCH_DUMP @{g.name}: {title}{t} ---\n{g}")
    sys.stderr.flush()

"""The pass pipeline: runs the IR passes in order on a copy of a (specialised) graph.

Owns `run(graph, passes=DEFAULT, verify_each=None) -> Graph` and `DEFAULT`. A pass is a name
(`"inline"`, `"simplify"`, `"cse"`, `"dce"`, `"fuse"`, `"verify"`) or any callable Graph -> Graph.
`run` clones the graph once and lets each pass rewrite that copy, so the caller's graph is never
modified. An unknown name is an error (no pass is skipped silently).

Environment: `JITORCH_DUMP=1` prints the graph before the passes and after each one, with the
pass's time, to stderr; `JITORCH_VERIFY=1` (or `verify_each=True`) runs the verifier after every
pass and names the pass that broke an invariant.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Callable, Iterable

from .. import ir
from ..ir.util import clone_graph

DEFAULT = ("inline", "simplify", "cse", "dce", "fuse", "verify")


def _resolve(name: str) -> Callable:
    if name == "verify":
        from ..ir.verify import verify
        return verify
    if name not in _PASS_MODULES:
        raise ValueError(f"unknown pass {name!r} (known: {', '.join(sorted(_PASS_MODULES))})")
    return importlib.import_module(f"{__package__}.{name}").run


# the passes a name may stand for (each module's `run`); imported when first used
_PASS_MODULES = ("inline", "simplify", "cse", "dce", "fuse", "verify")


def get_pass(p) -> tuple[str, Callable]:
    if callable(p):
        return getattr(p, "__module__", "").rsplit(".", 1)[-1] + "." + \
            getattr(p, "__name__", "pass"), p
    return p, _resolve(p)


def run(graph: ir.Graph, passes: Iterable = DEFAULT, verify_each: bool | None = None
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
            from ..ir.verify import VerifyError, verify
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

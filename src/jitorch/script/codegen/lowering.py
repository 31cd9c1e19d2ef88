"""The lowering table: op name -> the function that writes that op's node into an Emitter.

The one per-op table of the code generator. Each `lower_*` module registers its functions with
`@lowers("op", ...)` (the key is the op's IR name, which is its registry name); `cpu.lower_node`
looks a node's op up with `lowering_for(op)`. Elementwise registry ops with a scalar template
need no entry: they lower as fused loops (lower_elementwise.py). What is in neither is refused
(NotLowered) and runs in the interpreter, which is why every public registry op has a template,
an entry here, or an `interpreted="reason"` in its declaration (tests/test_registry_coverage.py).
Structural `prim::` ops are cpu.py's own; this table holds registry ops and the named helper
nodes of autodiff through control flow ("autodiff::<name>", codegen/lower_autodiff.py).
"""
from __future__ import annotations

import importlib
from typing import Callable

TABLE: dict[str, Callable] = {}

# the modules that fill TABLE, imported on first use (they import cpu.py, which imports this)
_MODULES = ("lower_autodiff", "lower_conv", "lower_factory", "lower_fft", "lower_gather",
            "lower_linalg", "lower_pool", "lower_reduce", "lower_shape", "lower_write")
_loaded: list = []


def lowers(*ops: str) -> Callable:
    """Register the decorated function as the lowering of each op in `ops`."""
    def register(fn: Callable) -> Callable:
        for op in ops:
            if op in TABLE and TABLE[op] is not fn:
                raise ValueError(f"op '{op}' has two lowerings")
            TABLE[op] = fn
        return fn
    return register


def table() -> dict[str, Callable]:
    """The whole table (every lowering module imported)."""
    if not _loaded:
        for m in _MODULES:
            importlib.import_module(f"{__package__}.{m}")
        _loaded.append(True)
    return TABLE


def lowering_for(op: str) -> Callable | None:
    return table().get(op)

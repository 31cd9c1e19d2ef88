"""The lowering table: (op name, target) -> the function that writes that op's node into an
Emitter.

The one per-op table of the code generators. A target's lowering modules
(`Target.lowering_modules`, under `targets/<name>/`) register their functions with
`@lowers("op", ..., target="<name>")`; a rule every target shares is registered with
`target=None`. `lowering_for(op, target)` gives the
target's own rule first, else the common one (JAX's `platform=`). The key is the op's IR name,
which is its registry name. Elementwise registry ops with a scalar template need no entry: a
target lowers them as fused loops (targets/cpu/lower_elementwise.py). What is in neither is
refused (NotLowered) and runs in the interpreter, which is why every public registry op has a
template, an entry here, or an `interpreted="reason"` in its declaration
(tests/test_registry_coverage.py). Structural `prim::` ops are each target's program
generator's own (targets/cpu/program.py); this table holds registry ops and the named helper
nodes of autodiff through control flow ("autodiff::<name>", targets/cpu/lower_autodiff.py).
"""
from __future__ import annotations

import importlib
from typing import Callable

TABLE: dict[tuple, Callable] = {}  # (op, target name or None) -> lowering
_loaded: set = set()  # targets whose lowering modules are imported


def lowers(*ops: str, target: str | None = None) -> Callable:
    """Register the decorated function as the lowering of each op in `ops`, for `target`
    (a target's name) or for every target (None)."""
    def register(fn: Callable) -> Callable:
        for op in ops:
            if TABLE.get((op, target), fn) is not fn:
                raise ValueError(f"op '{op}' has two lowerings for target {target}")
            TABLE[(op, target)] = fn
        return fn
    return register


def _load(target) -> None:
    if target.name not in _loaded:
        for m in target.lowering_modules:
            importlib.import_module(m)
        _loaded.add(target.name)


def table(target) -> dict[str, Callable]:
    """op -> lowering for `target` (a Target or a device name): its own rules over the common
    ones (every lowering module of the target imported)."""
    if isinstance(target, str):
        from .target import get_target
        target = get_target(target)
    _load(target)
    out = {op: fn for (op, t), fn in TABLE.items() if t is None}
    out.update({op: fn for (op, t), fn in TABLE.items() if t == target.name})
    return out


def lowering_for(op: str, target) -> Callable | None:
    """The lowering of `op` for `target` (a Target): its own rule, else the common one."""
    _load(target)
    fn = TABLE.get((op, target.name))
    return fn if fn is not None else TABLE.get((op, None))

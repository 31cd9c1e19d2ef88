"""The fuzzer's op catalog: how to call each op, harvested from the OpInfo table.

Owns `FORMS`: one `CallForm` per (OpInfo entry, distinct argument pattern of its samples). A form
says how the call is spelled in source (`jitorch.add(...)`, `jitorch.nn.functional.softmax(...)`
or the method `x.view(...)`), which positions take tensors (with the rank and dtype the sample
gave them) and which take literals, and the registry kind of the op (`elementwise` forms take any
broadcastable operands, so the generator may feed them any program value).

Nothing here is a second op table: names, kinds and in-place variants come from the registry
(`jitorch._ops.registry.OPS`), argument patterns, supported dtypes and value domains from the
OpInfo samples (`tests/opinfos/`). A form keeps its OpInfo entry and sample index, so an input set
can redraw the sample's arrays with another seed (new values inside the op's domain, same shapes).
"""
from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, field

import numpy as np

import jitorch
from jitorch._ops.registry import OPS

from opinfo import OPINFOS

# Modules searched (in order) for the public spelling of an OpInfo entry's function.
_NAMESPACES = (("jitorch", jitorch), ("jitorch.nn.functional", jitorch.nn.functional),
               ("jitorch.linalg", jitorch.linalg), ("jitorch.special", getattr(jitorch, "special",
                                                                               None)))
_METHOD_LAMBDA = re.compile(r"lambda\s+(\w+)[^:]*:\s*\1\.(\w+)\(")


@dataclass
class Slot:
    """One argument of a form: a tensor ("T"), a list of tensors ("L"), or a literal ("S")."""
    kind: str
    rank: int = 0
    dtype: np.dtype | None = None
    ranks: tuple = ()  # "L": ranks of the list's tensors
    dtypes: tuple = ()
    value: object = None  # "S"


@dataclass
class CallForm:
    name: str  # the OpInfo entry's name
    spell: str  # "jitorch.add" (function) or ".view" (method on the first argument)
    kind: str  # registry kind, or "composite" for functions built from several ops
    args: list
    kwargs: dict
    info: object = field(repr=False)
    sample_index: int = 0
    sample_dtype: np.dtype | None = None

    @property
    def is_method(self) -> bool:
        return self.spell.startswith(".")

    @property
    def broadcasts(self) -> bool:
        """Operands are only broadcast together: any broadcastable program values fit."""
        return self.kind == "elementwise" and all(s.kind != "L" for s in self.args)

    def tensor_slots(self):
        return [i for i, s in enumerate(self.args) if s.kind == "T"]

    def signature(self):
        return (self.spell, tuple((s.kind, s.rank, s.ranks, _lit_key(s.value))
                                  for s in self.args),
                tuple(sorted((k, _lit_key(v.value) if isinstance(v, Slot) else _lit_key(v))
                             for k, v in self.kwargs.items())))


def _lit_key(v):
    try:
        hash(v)
        return (type(v).__name__, v) if not isinstance(v, float) or not math.isnan(v) else "nan"
    except TypeError:
        return repr(v)


def literal_ok(v) -> bool:
    """Whether `v` can be written as a literal in generated source (see `render_literal`)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return True
    if isinstance(v, jitorch.dtype):
        return True
    if isinstance(v, (tuple, list)):
        return all(literal_ok(e) and not isinstance(e, (tuple, list)) or
                   (isinstance(e, (tuple, list)) and all(literal_ok(x) for x in e)) for e in v)
    return False


def render_literal(v) -> str:
    if isinstance(v, np.bool_):
        v = bool(v)
    elif isinstance(v, np.integer):
        v = int(v)
    elif isinstance(v, np.floating):
        v = float(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
        return repr(v)
    if isinstance(v, jitorch.dtype):
        return f"jitorch.{v.name}"
    if isinstance(v, tuple):
        inner = ", ".join(render_literal(e) for e in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(render_literal(e) for e in v) + "]"
    return repr(v)


def _spelling(info):
    """How the entry's op is written in source, or None when it cannot be (a lambda that
    transforms its inputs, a function not reachable by a public name)."""
    fn = info.fn()
    if info.op is None:
        return f"jitorch.{info.name}" if hasattr(jitorch, info.name) else None
    if getattr(fn, "__name__", "") == "<lambda>":
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            return None
        m = _METHOD_LAMBDA.search(src)
        return "." + m.group(2) if m else None
    for prefix, mod in _NAMESPACES:
        if mod is None:
            continue
        name = getattr(fn, "__name__", None)
        if name and getattr(mod, name, None) is fn:
            return f"{prefix}.{name}"
    return None


def _kind(spell: str) -> str:
    name = spell.rsplit(".", 1)[-1]
    op = OPS.get(name)
    return op.kind if op is not None and spell.count(".") <= 1 else "composite"


def _slot_of(a):
    if isinstance(a, np.ndarray):
        return Slot("T", rank=a.ndim, dtype=a.dtype)
    if isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
        return Slot("L", ranks=tuple(x.ndim for x in a), dtypes=tuple(x.dtype for x in a))
    if literal_ok(a):
        return Slot("S", value=a)
    return None


def _forms_of(info):
    spell = _spelling(info)
    if spell is None:
        return []
    kind = _kind(spell)
    out, seen = [], set()
    for d in info.dtypes:
        if d.np.kind not in "fiub":
            continue  # complex programs are left to the OpInfo tests
        try:
            samples = info.samples(d.np, np.random.default_rng(0))
        except Exception:
            continue
        for k, s in enumerate(samples):
            args = [_slot_of(a) for a in s.args]
            kwargs = {}
            ok = all(a is not None for a in args) and bool(args)
            for key, v in s.kwargs.items():
                slot = _slot_of(v)
                if slot is None or slot.kind == "L":
                    ok = False
                    break
                kwargs[key] = slot
            if not ok or (spell.startswith(".") and args[0].kind != "T"):
                continue
            form = CallForm(info.name, spell, kind, args, kwargs, info, k, d.np)
            sig = (form.signature(), d.np.kind)
            if sig in seen:
                continue
            seen.add(sig)
            out.append(form)
    return out


def _all_forms():
    forms = []
    for info in OPINFOS:
        forms.extend(_forms_of(info))
    return forms


FORMS = _all_forms()
BY_NAME: dict = {}
for _f in FORMS:
    BY_NAME.setdefault(_f.name, []).append(_f)
del _f


def inplace_method(name: str) -> str | None:
    """The registry's in-place variant of an op (`add` -> `add_`), when the Tensor has one."""
    op = OPS.get(name)
    meth = name + "_"
    if op is not None and hasattr(jitorch.Tensor, meth):
        return meth
    return None


def redraw(form: CallForm, seed: int):
    """The sample's arguments drawn again with another seed: new values from the op's own
    sample generator (inside its domain: valid indices, positive divisors, ...), same shapes.
    None when the generator's shapes depend on the seed."""
    samples = form.info.samples(form.sample_dtype, np.random.default_rng(seed))
    if form.sample_index >= len(samples):
        return None
    return samples[form.sample_index]


def _mark_generic(forms):
    """A form is shape-generic when its entry's samples call it with the same literals on
    operands of several ranks (unary math, activations, reductions with dim=None ...): any
    program value may then fill its tensor slots."""
    ranks: dict = {}
    for f in forms:
        key = (f.name, f.spell, tuple(_lit_key(s.value) for s in f.args if s.kind == "S"),
               tuple(sorted((k, _lit_key(v.value)) for k, v in f.kwargs.items())))
        ranks.setdefault(key, set()).add(tuple(s.rank for s in f.args if s.kind == "T"))
        f.generic_key = key
    for f in forms:
        f.generic = len(ranks[f.generic_key]) >= 2 or f.broadcasts


_mark_generic(FORMS)


def _lowered_ops() -> set:
    """Registry ops the CPU code generator lowers (its lowering table, plus every elementwise op
    with a scalar template). One op without a lowering sends the whole program to the IR
    interpreter, so the generator uses this as a weight: mostly programs that compile, some
    that are interpreted. A weight only: what ran compiled is read from the runtime's stats."""
    try:
        from jitorch.script.codegen import lowering
    except ImportError:
        return set(OPS)
    names = set(lowering.table("cpu"))
    names |= {n for n, o in OPS.items() if o.kind == "elementwise" and o.scalar}
    return names


LOWERED = _lowered_ops()
for _f in FORMS:
    _name = _f.spell.rsplit(".", 1)[-1]
    # composites (nn.functional) are inlined into registry ops: assume they lower
    _f.lowered = _f.kind == "composite" or _name in LOWERED
del _f, _name

"""Input sets derived from a program's base set: same dtypes and ranks (so the same compiled
specialisation serves them), different values, sizes, layouts, aliasing and edge values.

Owns the choice of what each derived set exercises. Every set draws new values (sample-bound
arguments are redrawn by their OpInfo sample generator with another seed, so index arguments
stay valid for the op); on top of that a set may
- resize: new values for the program's size symbols, including 0 and 1 (and, in long mode, one
  long dim, where reductions change algorithm);
- relayout: tensor arguments stored transposed, sliced with a step and an offset, or expanded;
- alias: one argument is another one, its transpose, its first row, or an overlapping view;
- edge: nan, +-inf, -0.0, huge values, dtype limits, out-of-range indices.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import values
from .generate import LONG, SIZES
from .values import InputSet

MAX_ELEMENTS = 1 << 21


def derive_sets(g, k: int) -> list:
    out = []
    free_syms = sorted({d for a in g.prog.args if a.kind == "tensor" and a.origin is None
                        for d in a.dims if isinstance(d, str)})
    for j in range(1, k + 1):
        rng = np.random.default_rng([g.seed, g.index, j])
        notes = []
        sizes = dict(g.sizes)
        if free_syms and rng.random() < 0.45:
            sizes = _resize(rng, g, free_syms)
            notes.append("resize")
        edge = rng.random() < 0.25
        if edge:
            notes.append("edge")
        s = InputSet(values=[], layouts=[], sizes=sizes)
        for i, arg in enumerate(g.prog.args):
            s.values.append(_value(g, rng, arg, sizes, j, edge, g.base.values[i]))
            s.layouts.append(("contig",) if arg.kind == "tensor" else None)
        if rng.random() < 0.35 and _relayout(rng, g, s):
            notes.append("layout")
        if rng.random() < 0.3 and _alias(rng, g, s):
            notes.append("alias")
        s.note = "+".join(notes) or "values"
        out.append(s)
    return out


def _resize(rng, g, syms):
    for _ in range(20):
        sizes = dict(g.sizes)
        for sym in syms:
            sizes[sym] = int(rng.choice(SIZES))
        if g.long_dims and rng.random() < 0.3:
            sizes[syms[int(rng.integers(0, len(syms)))]] = int(rng.choice(LONG))
        if all(int(np.prod(g.shape_of(a, sizes), dtype=np.int64)) <= MAX_ELEMENTS
               for a in g.prog.args if a.kind == "tensor" and a.origin is None):
            return sizes
    return dict(g.sizes)


def _value(g, rng, arg, sizes, j, edge, base):
    if arg.kind != "tensor":
        from .statements import scalar_value
        return scalar_value(g, arg.kind) if rng.random() < 0.5 else base
    if arg.origin is None:
        return g.draw_free(arg, sizes, rng, edge)
    v = g.sample_value(arg.origin, j)
    if v is None or v.shape != base.shape or v.dtype != base.dtype:
        v = base
    v = v.copy()
    if edge and v.size:
        if v.dtype.kind in "iu":  # an index out of range (eager raises; so must compiled)
            bad = (-1000, 1000, -1) if v.dtype.kind == "i" else (np.iinfo(v.dtype).max,)
            bad = [b for b in bad if np.iinfo(v.dtype).min <= b <= np.iinfo(v.dtype).max]
            v.flat[int(rng.integers(0, v.size))] = int(rng.choice(bad))
        elif v.dtype.kind == "f":
            v.flat[int(rng.integers(0, v.size))] = rng.choice((np.nan, np.inf, -np.inf))
    return v


def _relayout(rng, g, s) -> bool:
    done = False
    for i, arg in enumerate(g.prog.args):
        if arg.kind != "tensor" or rng.random() < 0.4:
            continue
        v = s.values[i]
        opts = []
        if v.ndim >= 2:
            opts.append("perm")
        if v.ndim >= 1:
            opts += ["step", "expand"]
        if not opts:
            continue
        how = opts[int(rng.integers(0, len(opts)))]
        if how == "perm":
            perms = [p for p in itertools.permutations(range(v.ndim)) if list(p) != sorted(p)]
            s.layouts[i] = ("perm", tuple(perms[int(rng.integers(0, len(perms)))]))
        elif how == "step":
            s.layouts[i] = ("step", int(rng.integers(0, v.ndim)), int(rng.integers(1, 4)),
                            int(rng.integers(0, 3)))
        else:
            dims = tuple(d for d in range(v.ndim) if rng.random() < 0.6) or (0,)
            s.layouts[i] = ("expand", dims)
        done = True
    return done


def _alias(rng, g, s) -> bool:
    ts = [i for i, a in enumerate(g.prog.args) if a.kind == "tensor"]
    pairs = [(i, j) for i in ts for j in ts if i < j and
             g.prog.args[i].dtype == g.prog.args[j].dtype]
    if not pairs:
        return False
    i, j = pairs[int(rng.integers(0, len(pairs)))]
    vi, vj = s.values[i], s.values[j]
    opts = []
    if vi.ndim == vj.ndim:
        opts.append("same")
        if vi.ndim >= 1 and vi.shape[0] >= 1 and s.layouts[i] == ("contig",):
            opts.append("shift")
    if vi.ndim == vj.ndim == 2:
        opts.append("t")
    if vj.ndim == vi.ndim - 1 and vi.shape[0] >= 1:
        opts.append("row")
    if not opts:
        return False
    how = opts[int(rng.integers(0, len(opts)))]
    if s.layouts[i][0] in values.ALIASES:
        return False
    s.layouts[j] = (how, i)
    return True

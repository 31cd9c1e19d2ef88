"""Input sets: the values, layouts and aliasing of one call of a fuzzed program.

Owns how arguments are made. An `InputSet` holds, per program argument, its logical values (a
NumPy array, or a Python number for scalar arguments) and how the tensor is laid out in memory:

- `("contig",)`: a fresh C-contiguous tensor;
- `("perm", perm)`: stored permuted and viewed back (`root.permute(inverse)`): same values,
  transposed strides;
- `("step", dim, step, offset)`: a slice with a step and an offset of a larger root whose other
  elements hold junk (reading a wrong element shows);
- `("expand", dims)`: a size-1 root expanded along `dims` (stride 0; the logical values are those
  of the root, repeated);
- `("same", j)`: the very tensor of argument j; `("shift", j)`: argument j and this one are
  `root[:-1]` and `root[1:]` of one root (overlapping views); `("t", j)`: `args[j].t()`;
  `("row", j)`: `args[j][0]`.

`build(input_set)` makes fresh tensors every time it is called (each mode gets its own, equal
copies) and returns the argument list plus the roots: the tensors that own the storage, which are
compared after the call (so writes through views and aliases are checked where they land).
`source(input_set)` writes the same construction as Python source for reproducers.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

import jitorch

HALF = ("float16", "bfloat16")


@dataclass
class InputSet:
    values: list  # per argument: np.ndarray (logical values) or a Python scalar
    layouts: list  # per argument: a layout tuple (see the module docstring); None for scalars
    sizes: dict = field(default_factory=dict)  # symbol -> size (free arguments)
    note: str = ""  # what the set exercises ("base", "resize", "layout", "alias", "edge", ...)

    def clone(self) -> "InputSet":
        return InputSet([v.copy() if isinstance(v, np.ndarray) else v for v in self.values],
                        copy.deepcopy(self.layouts), dict(self.sizes), self.note)

    def has_alias(self) -> bool:
        return any(lay and lay[0] in ALIASES for lay in self.layouts)

    def plain(self) -> bool:
        return all(lay is None or lay == ("contig",) for lay in self.layouts)


ALIASES = ("same", "shift", "t", "row")
_JUNK = 77


def _root_from(values: np.ndarray):
    return jitorch.tensor(values.copy())


def build(s: InputSet):
    """-> (args, roots): fresh tensors laid out as `s` says."""
    args, roots = [], []
    for i, (v, lay) in enumerate(zip(s.values, s.layouts)):
        if lay is None:
            args.append(v)
            continue
        kind = lay[0]
        if kind == "contig":
            r = _root_from(v)
            roots.append(r)
            args.append(r)
        elif kind == "perm":
            perm = lay[1]
            r = _root_from(np.ascontiguousarray(v.transpose(perm)))
            roots.append(r)
            args.append(r.permute(*np.argsort(perm).tolist()))
        elif kind == "step":
            _, dim, step, off = lay
            shape = list(v.shape)
            shape[dim] = off + shape[dim] * step
            big = np.full(shape, _JUNK).astype(v.dtype)
            idx = [slice(None)] * v.ndim
            idx[dim] = slice(off, None, step)
            big[tuple(idx)] = v
            r = _root_from(big)
            roots.append(r)
            args.append(r[tuple(idx)])
        elif kind == "expand":
            small = v[tuple(slice(0, 1) if d in lay[1] else slice(None)
                            for d in range(v.ndim))]
            r = _root_from(np.ascontiguousarray(small))
            roots.append(r)
            args.append(r.expand(*v.shape))
        elif kind == "same":
            args.append(args[lay[1]])
        elif kind == "t":
            args.append(args[lay[1]].t())
        elif kind == "row":
            args.append(args[lay[1]][0])
        elif kind == "shift":
            j = lay[1]
            base = s.values[j]
            big = np.concatenate([base, base[-1:] if base.shape[0] else base], 0)
            r = _root_from(big)
            roots[_root_index(s, j)] = r
            args[j] = r[:-1]
            args.append(r[1:])
        else:
            raise ValueError(f"unknown layout {lay}")
    return args, roots


def _root_index(s: InputSet, j: int) -> int:
    """Index in the roots list of argument j's root (arguments before it that own one)."""
    k = 0
    for lay in s.layouts[:j]:
        if lay is not None and lay[0] not in ALIASES:
            k += 1
    return k


def logical_values(s: InputSet, i: int) -> np.ndarray:
    """What argument i holds when the call starts (aliases read their partner's values)."""
    lay = s.layouts[i]
    if lay is None or lay[0] not in ALIASES:
        v = s.values[i]
        if lay is not None and lay[0] == "expand":
            small = v[tuple(slice(0, 1) if d in lay[1] else slice(None) for d in range(v.ndim))]
            return np.broadcast_to(small, v.shape)
        return v
    j = lay[1]
    base = logical_values(s, j)
    if lay[0] == "same":
        return base
    if lay[0] == "t":
        return base.T
    if lay[0] == "row":
        return base[0]
    return np.concatenate([base, base[-1:]], 0)[1:]


# --- source for reproducers ----------------------------------------------------------------
def _array_source(v: np.ndarray) -> str:
    name = v.dtype.name
    if name in HALF or v.dtype.kind == "V":
        lit = np.asarray(v, dtype=np.float32)
        return f"jitorch.tensor({_list_source(lit)}, dtype=jitorch.float32).to(jitorch.{name})"
    return f"jitorch.tensor(np.array({_list_source(v)}, dtype=np.{name}).reshape({v.shape}))"


def _list_source(v: np.ndarray) -> str:
    flat = v.reshape(-1)
    if flat.size > 8 and (flat == flat[0]).all():
        return f"np.full({v.shape}, {_scalar(flat[0])})"
    return "[" + ", ".join(_scalar(x) for x in flat) + "]"


def _scalar(x) -> str:
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float):
        if x != x:
            return "float('nan')"
        if x in (float("inf"), float("-inf")):
            return "float('inf')" if x > 0 else "-float('inf')"
    return repr(x)


def source(s: InputSet, names) -> str:
    """Python source that builds the arguments `names` of `s` (as `build` does)."""
    lines = []
    for i, (v, lay, name) in enumerate(zip(s.values, s.layouts, names)):
        if lay is None:
            lines.append(f"{name} = {_scalar(v)}")
            continue
        kind = lay[0]
        if kind == "contig":
            lines.append(f"{name} = {_array_source(v)}")
        elif kind == "perm":
            inv = tuple(np.argsort(lay[1]).tolist())
            lines.append(f"{name} = {_array_source(np.ascontiguousarray(v.transpose(lay[1])))}"
                         f".permute{inv}")
        elif kind == "step":
            _, dim, step, off = lay
            shape = list(v.shape)
            shape[dim] = off + shape[dim] * step
            idx = ", ".join([":"] * dim + [f"{off}::{step}"])
            lines.append(f"_r{i} = jitorch.full({tuple(shape)}, {_JUNK}, "
                         f"dtype=jitorch.{v.dtype.name})")
            lines.append(f"_r{i}[{idx}] = {_array_source(v)}")
            lines.append(f"{name} = _r{i}[{idx}]")
        elif kind == "expand":
            small = np.ascontiguousarray(
                v[tuple(slice(0, 1) if d in lay[1] else slice(None) for d in range(v.ndim))])
            lines.append(f"{name} = {_array_source(small)}.expand{tuple(v.shape)}")
        elif kind == "same":
            lines.append(f"{name} = {names[lay[1]]}")
        elif kind == "t":
            lines.append(f"{name} = {names[lay[1]]}.t()")
        elif kind == "row":
            lines.append(f"{name} = {names[lay[1]]}[0]")
        elif kind == "shift":
            j = lay[1]
            lines.append(f"_r{i} = jitorch.cat([{names[j]}, {names[j]}[-1:]], 0)")
            lines.append(f"{names[j]}, {name} = _r{i}[:-1], _r{i}[1:]")
    return "\n".join(lines)


# --- drawing values ----------------------------------------------------------------------------
def draw(rng: np.random.Generator, dtype, shape, edge: bool = False) -> np.ndarray:
    """Values for a tensor of `dtype`: small dyadic floats (exact in every float type, so
    results rarely depend on rounding), small integers; `edge` mixes in the values where
    implementations tend to differ (nan, +-inf, -0.0, huge, dtype limits)."""
    npd = dtype.np
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        lo, hi = (0, 10) if npd.kind == "u" else (-5, 5)
        a = rng.integers(lo, hi + 1, size=shape)
        if edge and n:
            specials = np.array([info.min, info.max, 0, -1 if npd.kind == "i" else 1,
                                 info.max - 1], dtype=np.int64)
            m = rng.random(shape) < 0.3
            a = np.where(m, specials[rng.integers(0, len(specials), size=shape)], a)
        return np.asarray(a).astype(npd)
    k = rng.integers(-12, 13, size=shape) / 4.0
    wide = rng.standard_normal(size=shape) * 2.0
    a = np.where(rng.random(shape) < 0.75, k, wide)
    if edge and n:
        big = 300.5 if dtype.name in HALF else 1e30
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, big, -big, 300.5, -129.0,
                             1e-30])
        m = rng.random(shape) < 0.3
        a = np.where(m, specials[rng.integers(0, len(specials), size=shape)], a)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(a).astype(npd)

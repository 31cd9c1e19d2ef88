"""Type rules for op declarations (`defop(..., infer=rule)`): what the compiler's type pass reads.

A rule maps the abstract arguments of one op call to its output type: dtype and rank. Sizes are
not part of the result: the type pass drops them (a program is compiled per dtype/rank, never
per size) and the code generator reads them from the arrays at run time. Rules never see the IR, so
the registry stays free of `jitorch.script`: they read their arguments through an `Args` view
that the type pass (`script/passes/types.py`) implements over an IR node:

    a.tensor(k)   -> Tensor(dtype, rank) of tensor argument k (k: position or parameter name)
    a.const(k)    -> the compile-time value of argument k
    a.length(k)   -> the length of a size list/tuple argument (known even when its items are not)
    a.tensors(k)  -> [Tensor, ...] of a list argument built in the graph
    a.scalar(k)   -> "bool" | "int" | "float" | "none" | None: the kind of a Python-number argument
    a.data(k)     -> (shape, leaf kinds) of `tensor(data)`'s data when its nesting is static
    a.params, a.count -> the op's parameter names; the number of arguments the node has

Each accessor raises `Unknown` when the graph does not decide it; a rule that raises anything
leaves the output untyped, and the code generator then refuses the graph (NotLowered), so an
undecidable case is never typed wrongly. A rule returns a `Tensor`, a `ListOf(Tensor)` (ops
returning a list of views), or a tuple of those (one per output).

Elementwise ops need no rule here: the type pass applies their dtype rule (`OpDef.dtype_rule`)
to PyTorch's promoted operand dtype and takes the largest operand rank.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import _dtype as dt


class Unknown(TypeError):
    """The graph does not decide this argument (not a constant, not a typed tensor, ...).
    A TypeError, as the type errors of the rules before it: callers catch either."""


@dataclass(frozen=True)
class Tensor:
    dtype: object
    rank: int


@dataclass(frozen=True)
class ListOf:
    elem: Tensor


# --- shared rules -------------------------------------------------------------------------------

def same(a) -> Tensor:
    """The first operand's dtype and rank (views that keep rank, conv/pool, grads of those)."""
    return a.tensor(0)


def sized(k=1):
    """The first operand's dtype; the rank is the length of size argument `k`."""
    def rule(a):
        return Tensor(a.tensor(0).dtype, a.length(k))
    return rule


def like(k=1):
    """The first operand's dtype, the rank of tensor argument `k` (`expand_as`, `view_as`)."""
    def rule(a):
        return Tensor(a.tensor(0).dtype, a.tensor(k).rank)
    return rule


def rank_delta(delta: int):
    """The first operand's dtype, its rank plus `delta` (unsqueeze +1, select -1)."""
    def rule(a):
        t = a.tensor(0)
        return Tensor(t.dtype, t.rank + delta)
    return rule


def fixed_rank(rank: int, first: int = 0):
    """The promoted dtype of tensor operands `first` and `first + 1`, a fixed rank (mm, bmm)."""
    def rule(a):
        return Tensor(dt.promote_types(a.tensor(first).dtype, a.tensor(first + 1).dtype), rank)
    return rule


def matmul(a) -> Tensor:
    ta, tb = a.tensor(0), a.tensor(1)
    ra, rb = ta.rank, tb.rank
    if ra == 0 or rb == 0:
        raise Unknown("matmul of 0-d")
    if ra == 1 and rb == 1:
        rank = 0
    elif ra == 1:
        rank = rb - 1
    elif rb == 1:
        rank = ra - 1
    else:
        rank = max(ra, rb)
    return Tensor(dt.promote_types(ta.dtype, tb.dtype), rank)


def norm_dims(dim, rank: int) -> tuple:
    """Reduction dims as sorted non-negative ints (None or () means all dims)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(rank))
    if isinstance(dim, int):
        dim = (dim,)
    out = set()
    for d in dim:
        r = max(rank, 1)
        if not -r <= d < r:
            raise IndexError("dim out of range")
        out.add(d % r if rank else 0)
    return tuple(sorted(out))


class Reduction:
    """`op(input, dim, keepdim[, dtype])`: the rank drops by the reduced dims unless keepdim.

    `ints`: what an integer (or bool) input gives without `dtype=`: "long" (sum, prod: int64),
    "keep" (amax: the input's dtype) or "error" (mean: eager raises, so the type stays
    unknown and the interpreter raises it). `floats_only`: only float32/float64 inputs type."""

    def __init__(self, ints: str = "keep", floats_only: bool = False):
        self.ints, self.floats_only = ints, floats_only

    def out_dtype(self, d, dtype=None):
        """The result dtype for input dtype `d` and the `dtype=` argument (None: not given)."""
        if dtype is not None:
            return dtype
        if d.category <= dt.INT:
            if self.ints == "long":
                return dt.int64
            if self.ints == "error":
                raise Unknown("an integer input: eager raises")
        if self.floats_only and d not in (dt.float32, dt.float64):
            raise Unknown("a non-float input")
        return d

    def __call__(self, a) -> Tensor:
        t = a.tensor(0)
        dims = norm_dims(a.const(1), t.rank)
        rank = t.rank if a.const(2) else t.rank - len([d for d in dims if d < t.rank])
        dtype = a.const(3) if a.count > 3 else None
        return Tensor(self.out_dtype(t.dtype, dtype), rank)


def flatten(a) -> Tensor:
    t = a.tensor(0)
    if t.rank == 0:
        return Tensor(t.dtype, 1)
    s, e = a.const(1) % t.rank, a.const(2) % t.rank
    return Tensor(t.dtype, t.rank - (e - s))


def join(extra_rank: int):
    """`cat` (0) / `stack` (1) of a list built in the graph: the promoted dtype, the largest
    rank plus `extra_rank`."""
    def rule(a):
        ts = a.tensors(0)
        if not ts:
            raise Unknown("an empty list")
        d = ts[0].dtype
        for t in ts[1:]:
            d = dt.promote_types(d, t.dtype)
        return Tensor(d, max(t.rank for t in ts) + extra_rank)
    return rule


def index_view(a) -> Tensor:
    """`_index_view(x, basic)`: None adds a dim, an int removes one, a slice keeps it."""
    t = a.tensor(0)
    rank = t.rank
    for b in a.const(1):
        if b is None:
            rank += 1
        elif isinstance(b, int):
            rank -= 1
        elif not isinstance(b, tuple):
            raise Unknown("an index the rule does not know")
    return Tensor(t.dtype, rank)


def to_dtype(a) -> Tensor:
    return Tensor(a.const(1), a.tensor(0).rank)


def with_indices(a):
    """(values, int64 indices) of a max pool."""
    t = a.tensor(0)
    return t, Tensor(dt.int64, t.rank)


def ranked(rank: int):
    """The first operand's dtype, a fixed rank (`ravel`: 1)."""
    def rule(a):
        return Tensor(a.tensor(0).dtype, rank)
    return rule


def embedding(a) -> Tensor:
    """`embedding(indices, weight)`: the weight's dtype, one dim more than the indices."""
    return Tensor(a.tensor(1).dtype, a.tensor(0).rank + 1)


def list_of_same(a) -> ListOf:
    """A list of views of the first operand's dtype and rank (`chunk`)."""
    return ListOf(a.tensor(0))

"""Batching rules: how an op runs under `jitorch.func.vmap`, one rule per op family.

An op's declaration names its rule (`defop(..., batch=...)`); without one, the default of its
kind applies (`rule_for`): elementwise ops broadcast, reductions and scans with a `dim` shift it.
A rule is called as `rule(b, op, slots, attrs)` by the vmap dispatch mode with that mode popped,
so the ops a rule calls run on *physical* tensors (those of the enclosing level). `b` is the
mode: `b.size` is the batch size, `b.batched(x)` tells whether `x` carries this level's batch
dim, `b.phys(x)` is its physical tensor (batch dim at 0) and `b.ldim(x)` its logical ndim. The
rule returns the physical result(s), every tensor output with the batch dim at 0; a rule marked
`unbatched` returns a result that does not depend on the batch (`new_zeros`).

This module knows no compiler and no vmap machinery: only how each family of ops maps logical
dims to physical ones.
"""
from __future__ import annotations

from .._tensor import Tensor
from .registry import _operand_dtype, dispatch


class Rule:
    """A named batching rule; `unbatched`: the result does not carry the batch dim."""

    __slots__ = ("name", "fn", "unbatched")

    def __init__(self, name, fn, unbatched=False):
        self.name, self.fn, self.unbatched = name, fn, unbatched

    def __call__(self, b, op, slots, attrs):
        return self.fn(b, op, slots, attrs)

    def __repr__(self):
        return f"<batching rule {self.name}>"


def _no_rule(op, why=""):
    return NotImplementedError(f"vmap: no batching rule for '{op.name}'" + (f" ({why})"
                                                                            if why else ""))


def wrap_dim(d, n):
    """A logical dim in [-n, n) -> its physical position (the batch dim comes first)."""
    m = max(n, 1)
    if not -m <= d < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], "
                         f"but got {d})")
    return d % m + 1


def _pad(b, x, nd):
    """The physical tensor of `x` with size-1 dims after the batch dim up to logical ndim
    `nd`, so that it broadcasts against other operands as the logical `x` does."""
    p = b.phys(x)
    extra = nd - b.ldim(x)
    if extra <= 0:
        return p
    return p.reshape((p.shape[0],) + (1,) * extra + tuple(p.shape[1:]))


def _expand(b, x):
    """`x` with the batch dim at 0: batched tensors as they are, others expanded (no copy)."""
    if b.batched(x):
        return b.phys(x)
    return x.unsqueeze(0).expand((b.size,) + tuple(x.shape))


def _only_first(b, op, slots):
    for name, s in zip(op.tensors[1:], slots[1:]):
        items = s if name in op.lists else (s,)
        if any(b.batched(x) for x in items):
            raise _no_rule(op, f"batched '{name}'")


def _map_outputs(res, fn):
    if isinstance(res, Tensor):
        return fn(res)
    if isinstance(res, (tuple, list)):
        vals = [_map_outputs(r, fn) for r in res]
        if hasattr(res, "_fields"):
            return type(res)(*vals)
        return type(res)(vals)
    return res


# ----------------------------------------------------------------------------- elementwise
def _elementwise(b, op, slots, attrs):
    """Operands broadcast as their samples do (size-1 dims after the batch dim)."""
    tensors = [s for s in slots if isinstance(s, Tensor)]
    nd = max(b.ldim(t) for t in tensors)
    phys = tuple(_pad(b, s, nd) if isinstance(s, Tensor) and b.batched(s) else s for s in slots)
    if op.kind == "elementwise" and len({t.dtype for t in tensors}) > 1:
        # promotion reads logical ranks (0-dim tensors rank below dimensioned ones); batching
        # changes ranks, so the dtype is settled on the logical operands and given to all (as
        # eager dispatch casts every operand of an elementwise op to one compute dtype)
        d = _operand_dtype(slots)
        phys = tuple(p.to(d) if isinstance(p, Tensor) and p.dtype is not d else p for p in phys)
    return dispatch(op, phys, attrs)


ELEMENTWISE = Rule("elementwise", _elementwise)


# ----------------------------------------------------------------------------- dims
def _shift(v, n):
    if v is None:
        return None
    if isinstance(v, (tuple, list)):
        return type(v)(wrap_dim(d, n) for d in v)
    return wrap_dim(v, n)


def _reduce(b, op, slots, attrs):
    """`dim` (int, tuple or None: every dim) with an optional `keepdim`."""
    _only_first(b, op, slots)
    x = slots[0]
    n = b.ldim(x)
    p = b.phys(x)
    attrs = dict(attrs)
    dim = attrs.get("dim")
    flat = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    if flat or n == 0:
        if not flat:
            wrap_dim(dim if not isinstance(dim, (tuple, list)) else dim[0], 0)
        # the whole sample: flatten it and reduce the one dim (the op's own None semantics)
        p = p.reshape(p.shape[0], -1)
        attrs["dim"] = 1 if not isinstance(dim, (tuple, list)) or flat else (1,)
        res = dispatch(op, (p,) + tuple(slots[1:]), attrs)
        whole = b.phys(x).shape
        reduced = (b.size,) + ((1,) * n if attrs.get("keepdim", False) and flat else ())

        def unflatten(r):
            if r.dim() == 2 and r.shape[1] == p.shape[1]:  # a scan: the sample's shape again
                return r.reshape(whole)
            return r.reshape(reduced)
        return _map_outputs(res, unflatten)
    attrs["dim"] = _shift(dim, n)
    return dispatch(op, (p,) + tuple(slots[1:]), attrs)


REDUCE = Rule("reduce", _reduce)


def via(name, index=None, flatten=True):
    """Ops without a `dim` that are another op along one sample dim: max() is amax over the
    flattened sample (`flatten`), msort is sort along the sample's dim 0; `index` picks one
    output of a multi-output op."""
    def rule(b, op, slots, attrs):
        _only_first(b, op, slots)
        from .registry import OPS
        x = slots[0]
        p = b.phys(x)
        if flatten or b.ldim(x) == 0:
            p = p.reshape(p.shape[0], -1)
        other = OPS[name]
        kw = {a: _default(other, a) for a in other.attrs}
        kw["dim"] = 1
        res = dispatch(other, (p,), kw)
        res = res if index is None else res[index]
        return res.reshape(b.size) if b.ldim(x) == 0 and not flatten else res
    return Rule(f"via({name})", rule)


def _default(op, attr):
    import inspect
    return inspect.signature(op.impl).parameters[attr].default


def _trace(b, op, slots, attrs):
    x = slots[0]
    if b.ldim(x) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {b.ldim(x)}")
    return b.phys(x).diagonal(0, 1, 2).sum(-1)


TRACE = Rule("trace", _trace)


def dims(*names, extra=0, expand=False, shape=None):
    """Ops whose attributes `names` are dims of the input (of its ndim + `extra` for ops that
    add dims, e.g. unsqueeze). `expand`: every tensor operand gets the batch dim (gather's
    index, cat's list); otherwise only the first may be batched. `shape`: an attribute that is
    the sample's output shape (backward helpers: `_narrow_backward`'s input_shape)."""
    def rule(b, op, slots, attrs):
        x = slots[0]
        first = x[0] if op.tensors[0] in op.lists else x
        n = b.ldim(first) + extra
        if expand:
            phys = tuple([_expand(b, t) for t in s] if name in op.lists
                         else _expand(b, s) if isinstance(s, Tensor) else s
                         for name, s in zip(op.tensors, slots))
        else:
            _only_first(b, op, slots)
            phys = (b.phys(x),) + tuple(slots[1:])
        attrs = dict(attrs)
        for a in names:
            attrs[a] = _shift(attrs[a], n)
        if shape is not None:
            attrs[shape] = (b.size,) + tuple(attrs[shape])
        return dispatch(op, phys, attrs)
    return Rule("dims(" + ", ".join(names) + ")", rule)


def _permute(b, op, slots, attrs):
    x = slots[0]
    order = attrs["dims"]
    if len(order) != b.ldim(x):
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {b.ldim(x)} is not equal to len(dims) = {len(order)}")
    return dispatch(op, (b.phys(x),), {"dims": (0,) + _shift(tuple(order), b.ldim(x))})


PERMUTE = Rule("permute", _permute)


def _squeeze(b, op, slots, attrs):
    x = slots[0]
    dim = attrs["dim"]
    if dim is None:  # every size-1 dim of the sample (never the batch dim)
        dim = tuple(i for i, s in enumerate(x.shape) if s == 1)
    n = b.ldim(x)
    return dispatch(op, (b.phys(x),), {"dim": _shift(dim, n)})


SQUEEZE = Rule("squeeze", _squeeze)


def sizes(name, kind="reshape"):
    """Ops whose attribute `name` is the sample's shape: reshape-like (prepend the batch size),
    expand-like (`kind="expand"`, broadcasting the sample: pad it to the new rank first) or
    repeat-like (`"repeat"`, `"tile"`: the batch dim repeats once)."""
    def rule(b, op, slots, attrs):
        _only_first(b, op, slots)
        x = slots[0]
        size = attrs[name]
        size = (size,) if isinstance(size, int) else tuple(size)
        attrs = dict(attrs)
        if kind == "reshape":
            attrs[name] = (b.size,) + size
            return dispatch(op, (b.phys(x),) + tuple(slots[1:]), attrs)
        if kind == "tile" and len(size) < b.ldim(x):  # tile pads its dims with leading 1s
            size = (1,) * (b.ldim(x) - len(size)) + size
        if len(size) < b.ldim(x):
            raise RuntimeError(f"{op.name}: the number of sizes provided ({len(size)}) must be "
                               f"greater or equal to the number of dimensions in the tensor "
                               f"({b.ldim(x)})")
        p = _pad(b, x, len(size))
        attrs[name] = (b.size,) + size if kind == "expand" else (1,) + size
        return dispatch(op, (p,) + tuple(slots[1:]), attrs)
    return Rule(f"sizes({name}, {kind})", rule)


def _like_shape(b, op, slots, attrs):
    """view_as / reshape_as / expand_as: to the logical shape of `other`."""
    x, other = slots
    target = tuple(other.shape)
    expand = op.name == "expand_as"
    if not b.batched(x):  # the same result for every sample
        r = x.expand(target) if expand else x.reshape(target)
        return r.unsqueeze(0).expand((b.size,) + target)
    if expand:
        return _pad(b, x, len(target)).expand((b.size,) + target)
    return b.phys(x).reshape((b.size,) + target)


LIKE_SHAPE = Rule("like_shape", _like_shape)


def _flat(b, op, slots, attrs):
    """ravel, t, fliplr, flipud: sample-rank-aware views."""
    x = slots[0]
    p = b.phys(x)
    n = b.ldim(x)
    if op.name == "ravel":
        return p.reshape(b.size, -1)
    if op.name == "t":
        if n > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
        return p.transpose(1, 2) if n == 2 else p
    if n < (2 if op.name == "fliplr" else 1):
        raise RuntimeError(f"Input must be >= {2 if op.name == 'fliplr' else 1}-d.")
    return p.flip(2 if op.name == "fliplr" else 1)


FLAT = Rule("flat", _flat)


def _roll(b, op, slots, attrs):
    x = slots[0]
    p = b.phys(x)
    if attrs["dims"] is None or attrs["dims"] == ():  # a roll of the flattened sample
        return p.reshape(b.size, -1).roll(attrs["shifts"], 1).reshape(p.shape)
    return dispatch(op, (p,), {"shifts": attrs["shifts"],
                               "dims": _shift(attrs["dims"], b.ldim(x))})


ROLL = Rule("roll", _roll)


def _leading(b, op, slots, attrs):
    """Ops on the trailing dims that treat any leading dims as a batch (matrix functions,
    tril/triu, embedding's indices): the physical input is a valid input as it is."""
    _only_first(b, op, slots)
    return dispatch(op, (b.phys(slots[0]),) + tuple(slots[1:]), attrs)


LEADING = Rule("leading", _leading)


def _random_same(b, op, slots, attrs):
    """Random ops drawing a tensor shaped like their input (dropout's mask): the mode refuses
    the draw in randomness="error" (PyTorch's error); otherwise one draw for the logical
    shape, shared by every sample (what randomness="same" means)."""
    b.random_op(op.name)
    x = slots[0]
    sample = b.phys(x)[0] if b.batched(x) else x
    return dispatch(op, (sample,) + tuple(slots[1:]), attrs)


RANDOM_SAME = Rule("random_same", _random_same, unbatched=True)


def fold(rank):
    """nn ops over (N, C, *spatial) inputs of rank `rank` (or unbatched, rank - 1): the vmap
    batch folds into N and unfolds after."""
    def rule(b, op, slots, attrs):
        _only_first(b, op, slots)
        x = slots[0]
        p = b.phys(x)
        if b.ldim(x) != rank:  # an unbatched sample: the vmap batch is N
            return dispatch(op, (p,) + tuple(slots[1:]), attrs)
        n = p.shape[1]
        res = dispatch(op, (p.reshape((b.size * n,) + tuple(p.shape[2:])),) + tuple(slots[1:]),
                       attrs)
        return _map_outputs(res, lambda r: r.reshape((b.size, n) + tuple(r.shape[1:])))
    return Rule(f"fold({rank})", rule)


def _class_index(b, op, slots, attrs):
    """nll_loss/cross_entropy's target check: fold the vmap batch into N."""
    x, target, weight = slots
    if b.batched(weight) if isinstance(weight, Tensor) else False:
        raise _no_rule(op, "batched 'weight'")
    px, pt = _expand(b, x), _expand(b, target)
    if b.ldim(x) > 1:
        px = px.reshape((-1,) + tuple(px.shape[2:]))
        pt = pt.reshape((-1,) + tuple(pt.shape[2:]))
    res = dispatch(op, (px, pt, weight), attrs)
    return res.reshape((b.size,) + tuple(target.shape))


CLASS_INDEX = Rule("class_index", _class_index)


# ----------------------------------------------------------------------------- matmul family
_MATMUL_RANKS = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}


def _matmul(b, op, slots, attrs):
    """matmul semantics on the samples (mm/bmm/mv/dot are matmul on their valid ranks)."""
    a, c = slots
    la, lc = b.ldim(a), b.ldim(c)
    want = _MATMUL_RANKS.get(op.name)
    if want is not None and (la, lc) != want:
        raise RuntimeError(f"{op.name}: expected {want[0]}D and {want[1]}D tensors, but got "
                           f"{la}D and {lc}D")
    if la == 0 or lc == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{la}D and {lc}D")
    pa = b.phys(a) if b.batched(a) else a
    pc = b.phys(c) if b.batched(c) else c
    # vectors become matrices (as matmul does), removed again at the end
    if la == 1:
        pa = pa.unsqueeze(-2)
    if lc == 1:
        pc = pc.unsqueeze(-1)
    ra, rc = max(la, 2) - 2, max(lc, 2) - 2  # sample batch ranks
    nb = max(ra, rc)
    # put the vmap dim outermost in both operands' batch dims, aligned right to left
    if b.batched(a):
        pa = pa.reshape((b.size,) + (1,) * (nb - ra) + tuple(pa.shape[1:]))
    else:
        pa = pa.reshape((1,) * (nb - ra + 1) + tuple(pa.shape))
    if b.batched(c):
        pc = pc.reshape((b.size,) + (1,) * (nb - rc) + tuple(pc.shape[1:]))
    else:
        pc = pc.reshape((1,) * (nb - rc + 1) + tuple(pc.shape))
    from .registry import OPS
    r = dispatch(OPS["matmul"], (pa, pc), {})
    if la == 1:
        r = r.squeeze(-2)
    if lc == 1:
        r = r.squeeze(-1)
    return r


MATMUL = Rule("matmul", _matmul)


def _outer(b, op, slots, attrs):
    a, c = slots
    if b.ldim(a) != 1 or b.ldim(c) != 1:
        raise RuntimeError(f"{op.name}: expected 1D tensors")
    pa = _expand(b, a).unsqueeze(-1)
    pc = _expand(b, c).unsqueeze(-2)
    return pa * pc


OUTER = Rule("outer", _outer)


# ----------------------------------------------------------------------------- indexing
def _index_view(b, op, slots, attrs):
    x = slots[0]
    p = b.phys(x)
    return dispatch(op, (p,), {"basic": ((0, p.shape[0], 1),) + tuple(attrs["basic"])})


INDEX_VIEW = Rule("index_view", _index_view)


def _index(b, op, slots, attrs):
    """x[basic][adv]; index tensors that carry the batch go sample by sample (`_loop`)."""
    x, indices = slots
    if any(b.batched(t) for t in indices):
        return _loop(b, op, slots, attrs)
    p = b.phys(x)
    adv = tuple(attrs["adv"])
    pos = [i for i, a in enumerate(adv) if a is not None]
    r = dispatch(op, (p, indices), {"basic": ((0, p.shape[0], 1),) + tuple(attrs["basic"]),
                                    "adv": (None,) + adv})
    if pos and pos != list(range(pos[0], pos[-1] + 1)):
        # separated index tensors put their dims first (NumPy's rule): before the batch dim
        return r.movedim(_adv_rank(indices), 0)
    return r


def _adv_rank(indices):
    shapes = [tuple(t.shape) if t.dtype.name != "bool" else (int(t.sum()),) for t in indices]
    nd = 0
    for s in shapes:
        nd = max(nd, len(s))
    return nd


INDEX = Rule("index", _index)


def _index_backward(b, op, slots, attrs):
    """The VJP of indexing: zeros of the input's shape with the gradient put at the index."""
    grad, indices = slots
    if any(b.batched(t) for t in indices):
        return _loop(b, op, slots, attrs)
    g = b.phys(grad)
    adv = tuple(attrs["adv"])
    pos = [i for i, a in enumerate(adv) if a is not None]
    if pos and pos != list(range(pos[0], pos[-1] + 1)):
        g = g.movedim(0, _adv_rank(indices))  # NumPy's layout of separated index tensors
    return dispatch(op, (g, indices), {
        "shape": (b.size,) + tuple(attrs["shape"]),
        "basic": ((0, b.size, 1),) + tuple(attrs["basic"]),
        "adv": (None,) + adv if adv else ()})


INDEX_BACKWARD = Rule("index_backward", _index_backward)


def _loop(b, op, slots, attrs):
    """One call per sample, stacked: for ops whose batched form has no cheaper rule yet
    (convolution gradients with per-sample weights, scatter-like ops)."""
    from .registry import OPS
    outs = []
    for i in range(b.size):
        sample = tuple([b.phys(t).select(0, i) if b.batched(t) else t for t in s]
                       if name in op.lists else
                       b.phys(s).select(0, i) if isinstance(s, Tensor) and b.batched(s) else s
                       for name, s in zip(op.tensors, slots))
        outs.append(dispatch(op, sample, attrs))
    stack = OPS["stack"]
    if isinstance(outs[0], Tensor):
        return dispatch(stack, (outs,), {"dim": 0})
    return type(outs[0])(dispatch(stack, ([o[k] for o in outs],), {"dim": 0})
                         for k in range(len(outs[0])))


LOOP = Rule("loop", _loop)


def _einsum(b, op, slots, attrs):
    """A fresh label for the batch dim on every batched operand and on the output."""
    operands = slots[0]
    ins, out = attrs["spec"]
    fresh = 1 + max([x for lab in ins for x in lab] + list(out) + [0])
    phys, labs = [], []
    for t, lab in zip(operands, ins):
        if b.batched(t):
            phys.append(b.phys(t))
            labs.append((fresh,) + tuple(lab))
        else:
            phys.append(t)
            labs.append(tuple(lab))
    return dispatch(op, (phys,), {"spec": (tuple(labs), (fresh,) + tuple(out))})


EINSUM = Rule("einsum", _einsum)


# ----------------------------------------------------------------------------- factories
def _tensor_attrs(b, attrs):
    return {k: (b.phys(v) if isinstance(v, Tensor) and b.batched(v) else v)
            for k, v in attrs.items()}


# zeros_like(x) of a batched x is batched (one per sample); new_zeros(x, size) is not
LIKE = Rule("like", lambda b, op, slots, attrs: dispatch(op, slots, _tensor_attrs(b, attrs)))
NEW = Rule("new", lambda b, op, slots, attrs: dispatch(op, slots, _tensor_attrs(b, attrs)),
           unbatched=True)


# ----------------------------------------------------------------------------- resolution
def rule_for(op):
    """The op's batching rule: its declaration's, else its kind's default (None: no rule)."""
    r = op.batch
    if r is not None:
        return r
    if op.kind == "elementwise":
        return ELEMENTWISE
    if op.kind == "reduction" and "dim" in op.attrs:
        return REDUCE
    if op.kind == "factory":
        return LIKE if op.name.endswith("_like") else NEW if op.name.startswith("new_") else None
    return None

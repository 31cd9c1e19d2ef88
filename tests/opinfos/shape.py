"""OpInfo entries for shape, view, join/split and reordering ops (src/jitorch/_ops/shape.py,
join.py, reorder.py).

References are the NumPy equivalents (np.concatenate, np.array_split, np.diagonal, ...) or small
closed forms where PyTorch's rule differs from NumPy's (cat's legacy empty-tensor rule, split
by size, chunk). Samples cover negative dims, 0-d and empty tensors; gradient samples are small
float64 tensors. Method-only ops (view, expand, repeat, ...) are tested through `op=`.
"""
import numpy as np

import jitorch
from opinfo import FLOATS, OpInfo, Sample

DTYPES = FLOATS + (jitorch.int64, jitorch.bool, jitorch.complex64)


def _gen(dtype, rng):
    """r(*shape): a random array of `dtype` (ints in [-5, 5], bools, complex)."""
    dtype = np.dtype(dtype)

    def r(*shape):
        if dtype.kind == "b":
            return np.asarray(rng.random(shape) > 0.5)
        if dtype.kind in "iu":
            return rng.integers(-5, 6, size=shape).astype(dtype)
        a = rng.standard_normal(shape)
        if dtype.kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        return np.asarray(a).astype(dtype)
    return r


def _samples(*specs):
    """Samples from (shapes, extra args, kwargs, name) specs; shapes become random arrays (a list
    of shapes becomes a list argument)."""
    def gen(dtype, rng):
        r = _gen(dtype, rng)
        out = []
        for shapes, args, kwargs, name in specs:
            arrs = tuple([r(*s) for s in sh] if isinstance(sh, list) else r(*sh) for sh in shapes)
            out.append(Sample(arrs + tuple(args), dict(kwargs), name))
        return out
    return gen


def S(shapes, *args, name="", **kwargs):
    return (shapes, args, kwargs, name or f"{shapes}{args}{kwargs}")


# --- references where NumPy has no exact equivalent --------------------------------------------
def _expand_ref(a, *size):
    size = size[0] if len(size) == 1 and isinstance(size[0], tuple) else size
    lead = len(size) - a.ndim
    return np.broadcast_to(a, tuple(a.shape[i - lead] if s == -1 else s
                                    for i, s in enumerate(size)))


def _flatten_ref(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return a.reshape(1)
    s, e = start_dim % a.ndim, end_dim % a.ndim
    return a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:]) if a.size else \
        a.reshape(a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:])


def _unflatten_ref(a, dim, sizes):
    d = dim % a.ndim
    return a.reshape(a.shape[:d] + tuple(sizes) + a.shape[d + 1:])


def _squeeze_ref(a, dim=None):
    if dim is None:
        return np.squeeze(a)
    dims = dim if isinstance(dim, tuple) else (dim,)
    return np.squeeze(a, tuple(d % a.ndim for d in dims if a.ndim and a.shape[d] == 1))


def _narrow_ref(a, dim, start, length):
    idx = [slice(None)] * a.ndim
    start = start % a.shape[dim]
    idx[dim] = slice(start, start + length)
    return a[tuple(idx)]


def _cat_ref(tensors, dim=0):
    keep = [t for t in tensors if not (t.ndim == 1 and t.size == 0)]
    return np.concatenate(keep, axis=dim) if keep else tensors[0]


def _split_ref(a, split, dim=0):
    n = a.shape[dim]
    if isinstance(split, int):
        cuts = list(range(split, n, split)) if split else []
    else:
        cuts = list(np.cumsum(split)[:-1])
    return tuple(np.split(a, cuts, axis=dim))


def _chunk_ref(a, chunks, dim=0):
    n = a.shape[dim]
    return _split_ref(a, -(-n // chunks), dim) if n else tuple(np.split(a, [0] * (chunks - 1), dim))


def _column_stack_ref(tensors):
    return np.column_stack(tensors) if tensors[0].ndim else np.column_stack(
        [t.reshape(1, 1) if t.ndim == 0 else t for t in tensors])


def _ri_ref(a, repeats=None, dim=None, **kw):
    if repeats is None:
        return np.repeat(np.arange(a.size, dtype=a.dtype), a)
    return np.repeat(a, repeats, axis=dim)


def _roll_ref(a, shifts, dims=None):
    return np.roll(a, shifts, axis=dims)


def _swapaxes_ref(a, d0, d1):
    return a if a.ndim == 0 else np.swapaxes(a, d0, d1)


def _t_ref(a):
    return a.T


def _adjoint_ref(a):
    return np.swapaxes(a, -1, -2).conj()


def _broadcast_shapes_ref(*shapes):
    return tuple(np.broadcast_shapes(*[(s,) if isinstance(s, int) else s for s in shapes]))


def _view_dtype_ref(a, dtype):
    return a.view(dtype.np)


_GRAD2 = _samples(S([(2, 3)], name="2d"))

OPINFOS = [
    # --- reshape / view ---------------------------------------------------------------------
    OpInfo("reshape", lambda a, shape: a.reshape(shape), _samples(
        S([(2, 3)], (3, 2)), S([(2, 3)], (-1,)), S([(2, 3, 4)], (4, -1, 3)), S([()], (1, 1)),
        S([(1, 1)], ()), S([(0, 3)], (3, 0)), S([(2, 3)], (1, 6, 1))), dtypes=DTYPES),
    OpInfo("view", lambda a, *shape: a.reshape(shape[0] if len(shape) == 1 else shape), _samples(
        S([(2, 3)], 3, 2), S([(2, 3)], -1), S([(2, 3, 4)], (4, -1, 3)), S([()], 1, 1),
        S([(0, 3)], 3, 0)), dtypes=DTYPES, op=lambda a, *s: a.view(*s), method=False),
    OpInfo("view_as", lambda a, b: a.reshape(b.shape), _samples(
        S([(2, 3), (3, 2)]), S([(2, 3), (6,)]), S([(1,), ()])), dtypes=DTYPES,
        op=lambda a, b: a.view_as(b), method=False, skip_grad_args=(1,)),
    OpInfo("reshape_as", lambda a, b: a.reshape(b.shape), _samples(
        S([(2, 3), (3, 2)]), S([(2, 3), (6,)])), dtypes=DTYPES,
        op=lambda a, b: a.reshape_as(b), method=False, skip_grad_args=(1,)),
    OpInfo("view.dtype", _view_dtype_ref, lambda dtype, rng: [
        Sample((_gen(np.float32, rng)(2, 4), d), name=d.name)
        # (float64 is left to test_shape.py: the table reads float64 results of float32
        # inputs as float32)
        for d in (jitorch.int32, jitorch.float16, jitorch.int8, jitorch.bfloat16,
                  jitorch.uint8)],
        dtypes=(jitorch.float32,), op=lambda a, d: a.view(d), method=False, grad=False,
        jvp=False, out_dtype=None, compare=lambda g, w: np.testing.assert_array_equal(
            g.view(np.uint8), w.view(np.uint8))),
    # --- broadcasting ---------------------------------------------------------------------------
    OpInfo("expand", _expand_ref, _samples(
        S([(2, 1)], 2, 3), S([(2, 1)], 4, 2, 5), S([(3,)], -1), S([(2, 1)], (3, -1, 4)),
        S([()], 2, 2), S([(2, 1)], 2, 0)), dtypes=DTYPES, op=lambda a, *s: a.expand(*s),
        method=False),
    OpInfo("expand_as", lambda a, b: np.broadcast_to(a, b.shape), _samples(
        S([(2, 1), (3, 2, 4)]), S([(), (2,)])), dtypes=DTYPES,
        op=lambda a, b: a.expand_as(b), method=False, skip_grad_args=(1,)),
    OpInfo("broadcast_to", lambda a, size: np.broadcast_to(a, size), _samples(
        S([(2, 1)], (2, 3)), S([(3,)], (2, 3)), S([()], (2,)), S([(1, 3)], (0, 3))),
        dtypes=DTYPES),
    OpInfo("broadcast_tensors", lambda *a: tuple(np.broadcast_arrays(*a)), _samples(
        S([(2, 1), (3,)]), S([(2, 1), (3,), ()]), S([(4,)]), S([(0, 1), (1, 3)])),
        dtypes=DTYPES, method=False),
    OpInfo("broadcast_shapes", _broadcast_shapes_ref, lambda dtype, rng: [
        Sample(((2, 1), (3,))), Sample(((5, 1, 4), 4, [2, 1, 1, 1])), Sample(()),
        Sample(((0,), (1,)))], dtypes=(jitorch.float32,), method=False, grad=False, jvp=False),
    # --- flatten / squeeze ----------------------------------------------------------------------
    OpInfo("flatten", _flatten_ref, _samples(
        S([(2, 3, 4)]), S([(2, 3, 4)], 1), S([(2, 3, 4)], 0, 1), S([(2, 3, 4)], -2, -1),
        S([(2, 3, 4)], 1, 1), S([()]), S([(2, 0, 3)], 1)), dtypes=DTYPES),
    OpInfo("unflatten", _unflatten_ref, _samples(
        S([(2, 6)], 1, (2, 3)), S([(2, 6)], -1, (3, -1)), S([(6,)], 0, (1, 6, 1)),
        S([(0, 4)], 1, (2, 2))), dtypes=DTYPES),
    OpInfo("ravel", np.ravel, _samples(S([(2, 3)]), S([()]), S([(0, 2)])), dtypes=DTYPES),
    OpInfo("squeeze", _squeeze_ref, _samples(
        S([(1, 2, 1)]), S([(1, 2, 1)], 0), S([(1, 2, 1)], 1), S([(1, 2, 1)], -1),
        S([(1, 2, 1, 1)], (0, -1)), S([()]), S([()], 0), S([(1, 0)]),
        S([(1, 2, 1)], dim=(0, 2), name="kw")), dtypes=DTYPES),
    OpInfo("unsqueeze", np.expand_dims, _samples(
        S([(2, 3)], 0), S([(2, 3)], 2), S([(2, 3)], -1), S([()], 0), S([(0,)], -2)),
        dtypes=DTYPES),
    # --- dimension reordering -------------------------------------------------------------------
    OpInfo("permute", np.transpose, _samples(
        S([(2, 3, 4)], (2, 0, 1)), S([(2, 3, 4)], (-1, 0, 1)), S([()], ()),
        S([(2, 0)], (1, 0))), dtypes=DTYPES),
    OpInfo("transpose", _swapaxes_ref, _samples(
        S([(2, 3, 4)], 0, 2), S([(2, 3)], -1, 0), S([(2, 3)], 1, 1), S([()], 0, -1)),
        dtypes=DTYPES),
    OpInfo("swapaxes", np.swapaxes, _samples(S([(2, 3, 4)], 0, 2), S([(2, 3)], -1, 0)),
           dtypes=DTYPES),
    OpInfo("swapdims", np.swapaxes, _samples(S([(2, 3, 4)], 0, 2), S([(2, 3)], -1, 0)),
           dtypes=DTYPES),
    OpInfo("movedim", np.moveaxis, _samples(
        S([(2, 3, 4)], 0, 2), S([(2, 3, 4)], (0, 1), (2, 0)), S([(2, 3, 4)], -1, 0),
        S([(2, 3)], [], [])), dtypes=DTYPES),
    OpInfo("moveaxis", np.moveaxis, _samples(S([(2, 3, 4)], (0, 1), (-1, 0))), dtypes=DTYPES),
    OpInfo("t", _t_ref, _samples(S([(2, 3)]), S([(3,)]), S([()]), S([(0, 2)])), dtypes=DTYPES),
    OpInfo("adjoint", _adjoint_ref, _samples(S([(2, 3)]), S([(2, 3, 4)]), S([(0, 2)])),
           dtypes=DTYPES),
    # --- picking part of a tensor ---------------------------------------------------------------
    OpInfo("diagonal", np.diagonal, _samples(
        S([(3, 4)]), S([(3, 4)], 1), S([(3, 4)], -2), S([(3, 4)], 5), S([(2, 3, 4)], 0, 2, 0),
        S([(2, 3, 4)], -1, -1, 1), S([(0, 3)])), dtypes=DTYPES,
        grad_samples=_samples(S([(3, 4)], 1), S([(2, 3, 4)], -1, 2, 0))),
    OpInfo("narrow", _narrow_ref, _samples(
        S([(2, 5)], 1, 1, 3), S([(2, 5)], 0, 0, 1), S([(2, 5)], -1, -2, 2),
        S([(2, 5)], 1, 5, 0)), dtypes=DTYPES),
    OpInfo("select", lambda a, dim, index: np.take(a, index, dim), _samples(
        S([(2, 3)], 1, 2), S([(2, 3)], 0, -1), S([(4,)], 0, 1), S([(2, 3, 4)], -1, 0)),
        dtypes=DTYPES),
    OpInfo("atleast_1d", np.atleast_1d, _samples(S([()]), S([(3,)]), S([(2, 3)])),
           dtypes=DTYPES, method=False),
    OpInfo("atleast_2d", np.atleast_2d, _samples(S([()]), S([(3,)]), S([(2, 3)])),
           dtypes=DTYPES, method=False),
    OpInfo("atleast_3d", np.atleast_3d, _samples(
        S([()]), S([(3,)]), S([(2, 3)]), S([(2, 3, 4)])), dtypes=DTYPES, method=False),
    # --- joins ----------------------------------------------------------------------------------
    OpInfo("cat", _cat_ref, _samples(
        S([[(2, 2), (2, 3)]], 1), S([[(2, 2), (3, 2), (1, 2)]]), S([[(2, 2), (2, 1)]], -1),
        S([[(2, 2), (0,), (1, 2)]], name="legacy-empty"), S([[(0,), (0,)]], name="all-empty"),
        S([[(2, 3)]], dim=1, name="kw")), dtypes=DTYPES, method=False),
    OpInfo("concat", _cat_ref, _samples(S([[(2, 2), (2, 3)]], 1)), dtypes=DTYPES,
           method=False),
    OpInfo("concatenate", lambda tensors, axis=0: _cat_ref(tensors, axis),
           _samples(S([[(2, 2), (2, 3)]], axis=1, name="axis")), dtypes=DTYPES, method=False),
    OpInfo("stack", lambda ts, dim=0: np.stack(ts, dim), _samples(
        S([[(2, 3), (2, 3)]]), S([[(2, 3), (2, 3), (2, 3)]], 2), S([[(), ()]], -1),
        S([[(0, 2)]], 1)), dtypes=DTYPES, method=False),
    OpInfo("hstack", np.hstack, _samples(
        S([[(2,), (3,)]]), S([[(2, 2), (2, 3)]]), S([[(), ()]])), dtypes=DTYPES, method=False),
    OpInfo("vstack", np.vstack, _samples(
        S([[(2,), (2,)]]), S([[(2, 2), (3, 2)]]), S([[(), ()]])), dtypes=DTYPES, method=False),
    OpInfo("row_stack", np.vstack, _samples(S([[(2,), (2,)]]), S([[(2, 2), (3, 2)]])),
           dtypes=DTYPES, method=False),
    OpInfo("dstack", np.dstack, _samples(
        S([[(2,), (2,)]]), S([[(2, 2), (2, 2)]]), S([[(2, 2, 1), (2, 2, 3)]]), S([[(), ()]])),
        dtypes=DTYPES, method=False),
    OpInfo("column_stack", _column_stack_ref, _samples(
        S([[(3,), (3,)]]), S([[(3, 2), (3,)]]), S([[(), ()]])), dtypes=DTYPES, method=False),
    # --- splits ---------------------------------------------------------------------------------
    OpInfo("split", _split_ref, _samples(
        S([(5, 2)], 2), S([(2, 5)], 2, 1), S([(2, 5)], [1, 0, 4], -1), S([(5,)], 5),
        S([(0, 3)], 0), S([(2, 5)], (3, 2), dim=1, name="kw")), dtypes=DTYPES),
    OpInfo("chunk", _chunk_ref, _samples(
        S([(6,)], 4), S([(5, 2)], 2), S([(2, 5)], 3, 1), S([(0,)], 3), S([(3,)], 5)),
        dtypes=DTYPES),
    OpInfo("tensor_split", lambda a, ios, dim=0: tuple(np.array_split(a, ios, dim)), _samples(
        S([(7,)], 3), S([(2, 7)], [1, 5], 1), S([(7, 2)], [-2, 5]), S([(7,)], [1, 5, 3, 10]),
        S([(3,)], 5)), dtypes=DTYPES),
    OpInfo("hsplit", lambda a, ios: tuple(np.hsplit(a, ios)), _samples(
        S([(4,)], 2), S([(2, 6)], 3), S([(2, 6)], [1, 4])), dtypes=DTYPES),
    OpInfo("vsplit", lambda a, ios: tuple(np.vsplit(a, ios)), _samples(
        S([(4, 2)], 2), S([(6, 2)], [1, 4])), dtypes=DTYPES),
    OpInfo("dsplit", lambda a, ios: tuple(np.dsplit(a, ios)), _samples(
        S([(1, 2, 4)], 2), S([(2, 1, 6)], [1, 4])), dtypes=DTYPES),
    OpInfo("unbind", lambda a, dim=0: tuple(np.moveaxis(a, dim, 0)), _samples(
        S([(3, 2)]), S([(2, 3)], 1), S([(2, 3)], -1), S([(4,)])), dtypes=DTYPES),
    # --- reorder (copies) -----------------------------------------------------------------------
    OpInfo("flip", lambda a, dims: np.flip(a, dims) if a.ndim else a, _samples(
        S([(2, 3)], (0,)), S([(2, 3)], (0, 1)), S([(2, 3, 4)], (-1, 0)), S([(2, 3)], ()),
        S([()], (0,))), dtypes=DTYPES),
    OpInfo("fliplr", np.fliplr, _samples(S([(2, 3)]), S([(2, 3, 4)])), dtypes=DTYPES),
    OpInfo("flipud", np.flipud, _samples(S([(2, 3)]), S([(4,)])), dtypes=DTYPES),
    OpInfo("roll", _roll_ref, _samples(
        S([(2, 3)], 1), S([(2, 3)], -4), S([(2, 3)], (1, 2), (0, 1)), S([(2, 3)], 2, 1),
        S([(2, 3, 4)], (1, -1), (2, 0)), S([()], 1), S([(0, 3)], 1)), dtypes=DTYPES),
    OpInfo("rot90", lambda a, k=1, dims=(0, 1): np.rot90(a, k, dims), _samples(
        S([(2, 3)]), S([(2, 3)], 2), S([(2, 3)], -1), S([(2, 3, 4)], 3, (2, 0)),
        S([(2, 3)], 5, [1, 0])), dtypes=DTYPES),
    OpInfo("repeat", lambda a, *r: np.tile(a, r[0] if len(r) == 1 else r), _samples(
        S([(2, 3)], 2, 1), S([(2, 3)], 2, 1, 2), S([(2, 3)], (1, 0)), S([()], 3),
        S([()], ())), dtypes=DTYPES, op=lambda a, *r: a.repeat(*r), method=False),
    OpInfo("tile", np.tile, _samples(
        S([(2, 3)], (2,)), S([(2, 3)], (2, 1, 2)), S([()], (3,)), S([(2, 3)], ())),
        dtypes=DTYPES),
    OpInfo("repeat_interleave", _ri_ref, lambda dtype, rng: [
        Sample((_gen(dtype, rng)(2, 3), 2)), Sample((_gen(dtype, rng)(2, 3), 2, 1)),
        Sample((_gen(dtype, rng)(2, 3), np.array([1, 0, 2]), 1), name="tensor"),
        Sample((_gen(dtype, rng)(2, 3), np.array([3]), 0), name="tensor1"),
        Sample((_gen(dtype, rng)(2, 3), np.array([1, 0, 2, 1, 1, 3])), name="flat"),
        Sample((_gen(dtype, rng)(), 2), name="0d")] + (
        [Sample((np.array([1, 2, 0], np.int64),), name="counts")]
        if np.dtype(dtype) == np.int64 else []), dtypes=DTYPES, skip_grad_args=(1,)),
]


def _nonempty(gen):
    """Gradient samples: the value samples without empty tensors (nothing to perturb)."""
    def grad_gen(dtype, rng):
        def empty(a):
            return (isinstance(a, np.ndarray) and a.size == 0) or (
                isinstance(a, list) and any(isinstance(x, np.ndarray) and x.size == 0
                                            for x in a))
        return [s for s in gen(dtype, rng) if not any(empty(a) for a in s.args)]
    return grad_gen


for _info in OPINFOS:
    if _info.grad_samples is None:
        _info.grad_samples = _nonempty(_info.samples)

"""The last batch of PyTorch's common top-level names (issue 19): `as_strided` (registry op,
with `as_strided_`, `as_strided_copy`, `as_strided_scatter`), `gradient`, the RNN cell
functions (`lstm_cell`, `gru_cell`, `rnn_tanh_cell`, `rnn_relu_cell`), `grid_sampler` /
`affine_grid_generator` (integer-coded forms of grid_sample / affine_grid), `norm_except_dim`,
the interop-thread and warn-always settings, top-level forms of existing in-place methods
(`addmv_`, `ldexp_`, `index_put_`, `resize_as_`), and the Tensor methods PyTorch 2 removed
(`eig`, `lstsq`, `solve`, `symeig`: their RuntimeError).
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _new
from .batching import LOOP
from .registry import defop

_NUMPY = "a NumPy gather over computed storage offsets: no Numba lowering yet"

__all__ = ["as_strided", "as_strided_", "as_strided_copy", "as_strided_scatter", "gradient",
           "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "norm_except_dim",
           "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
           "set_warn_always", "is_warn_always_enabled", "addmv_", "ldexp_", "index_put_",
           "resize_as_"]


def _jt():
    import jitorch
    return jitorch


# --- as_strided: a strided read of the (contiguous) storage --------------------------------------
def _offsets(size, stride, storage_offset):
    idx = np.full(tuple(size), int(storage_offset or 0), np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        idx = idx + (np.arange(n) * s).reshape(shape)
    return idx


def _as_strided_impl(input, size, stride, storage_offset=None):
    """The elements at storage_offset + sum(i_d * stride_d) of the input's row-major storage
    (a copy; PyTorch's is a view of the storage)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    idx = _offsets(size, stride, storage_offset)
    flat = np.ascontiguousarray(input).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= flat.size):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset or 0}, and itemsize "
                           f"{input.dtype.itemsize} requiring a storage size of "
                           f"{(int(idx.max()) + 1) * input.dtype.itemsize} are out of bounds "
                           f"for storage of size {flat.size * input.dtype.itemsize}")
    return flat[idx]


def _as_strided_backward_impl(grad, input_size, size, stride, storage_offset=None):
    out = np.zeros(int(np.prod(input_size)), grad.dtype)
    np.add.at(out, _offsets(tuple(size), tuple(stride), storage_offset).reshape(-1),
              grad.reshape(-1))
    return out.reshape(tuple(input_size))


as_strided = defop(
    "as_strided", _as_strided_impl, kind="other", interpreted=_NUMPY, batch=LOOP,
    vjp=lambda g, input_shape, size, stride, storage_offset: _as_strided_backward(
        g, tuple(input_shape), size, stride, storage_offset),
    jvp=lambda t_input, size, stride, storage_offset: as_strided(t_input, size, stride,
                                                                 storage_offset))
_as_strided_backward = defop(
    "_as_strided_backward", _as_strided_backward_impl, tensors=("grad",), kind="other",
    method=False, interpreted=_NUMPY, batch=LOOP,
    vjp=lambda g, size, stride, storage_offset: as_strided(g, size, stride, storage_offset),
    jvp=lambda t_grad, input_size, size, stride, storage_offset: _as_strided_backward(
        t_grad, input_size, size, stride, storage_offset))


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    r = as_strided(input, size, stride, storage_offset)
    return r if out is None else out.copy_(r)


def as_strided_(input, size, stride, storage_offset=None):
    """In place (no autograd): the tensor becomes the strided read of its storage."""
    if input.requires_grad:
        raise NotImplementedError("jitorch: as_strided_ on a tensor that requires grad is not "
                                  "implemented (use as_strided)")
    input._data = _as_strided_impl(input._data, size, stride, storage_offset)
    input._version[0] += 1
    return input


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with `src` written at the strided positions of its storage."""
    jt = _jt()
    idx = jt.tensor(_offsets(tuple(size), tuple(stride), storage_offset).reshape(-1))
    flat = input.reshape(-1).clone()
    flat[idx] = src.reshape(-1)
    return flat.reshape(tuple(input.shape))


Tensor.as_strided_ = as_strided_
Tensor.as_strided_scatter = as_strided_scatter


# --- gradient: finite differences along dims -----------------------------------------------------
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Central differences inside, one-sided (order `edge_order`) at the edges, per dim; as
    NumPy's gradient (uniform spacing, a scalar per dim, or coordinates per dim)."""
    jt = _jt()
    dims = list(range(input.dim())) if dim is None else \
        ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.dim() for d in dims]
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if not isinstance(spacing, (list, tuple)):
        spacing = [spacing] * len(dims)
    elif len(spacing) == 1 and len(dims) > 1:
        spacing = list(spacing) * len(dims)
    outs = []
    for d, h in zip(dims, spacing):
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        nar = lambda a, s, ln: a.narrow(d, s, ln)  # noqa: E731
        if isinstance(h, Tensor) and h.dim() == 1:  # coordinates
            x = h.to(input.dtype if input.is_floating_point() else jt.get_default_dtype())
            shape = [1] * input.dim()
            shape[d] = -1
            dx = (x[1:] - x[:-1]).reshape(shape)
            dx1, dx2 = nar(dx, 0, n - 2), nar(dx, 1, n - 2)
            inner = (-(dx2 / (dx1 * (dx1 + dx2))) * nar(input, 0, n - 2)
                     + ((dx2 - dx1) / (dx1 * dx2)) * nar(input, 1, n - 2)
                     + (dx1 / (dx2 * (dx1 + dx2))) * nar(input, 2, n - 2))
            first_dx, last_dx = nar(dx, 0, 1), nar(dx, n - 2, 1)
        else:
            hv = float(h.item()) if isinstance(h, Tensor) else float(h)
            inner = (nar(input, 2, n - 2) - nar(input, 0, n - 2)) / (2 * hv)
            first_dx = last_dx = hv
        if edge_order == 1:
            first = (nar(input, 1, 1) - nar(input, 0, 1)) / first_dx
            last = (nar(input, n - 1, 1) - nar(input, n - 2, 1)) / last_dx
        else:
            first = (-1.5 * nar(input, 0, 1) + 2 * nar(input, 1, 1) - 0.5 * nar(input, 2, 1)) \
                / first_dx
            last = (0.5 * nar(input, n - 3, 1) - 2 * nar(input, n - 2, 1)
                    + 1.5 * nar(input, n - 1, 1)) / last_dx
        outs.append(jt.cat([first, inner, last], d))
    return tuple(outs)


# --- RNN cells -----------------------------------------------------------------------------------
def _lin(x, w, b):
    out = x @ w.mT
    return out if b is None else out + b


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: (h', c') from input and (h, c) (gates i, f, g, o)."""
    h, c = hx
    gates = _lin(input, w_ih, b_ih) + _lin(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gates r, z, n)."""
    gi, gh = _lin(input, w_ih, b_ih), _lin(hx, w_hh, b_hh)
    ir, iz, in_ = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1 - z) * n + z * hx


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (_lin(input, w_ih, b_ih) + _lin(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return (_lin(input, w_ih, b_ih) + _lin(hx, w_hh, b_hh)).relu()


# --- integer-coded forms of nn.functional ops ----------------------------------------------------
_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADS = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    return _jt().nn.functional.grid_sample(input, grid, _MODES[interpolation_mode],
                                           _PADS[padding_mode], align_corners)


grid_sampler_2d = grid_sampler_3d = grid_sampler


def affine_grid_generator(theta, size, align_corners):
    return _jt().nn.functional.affine_grid(theta, list(size), align_corners)


def norm_except_dim(v, pow=2, dim=0):
    """The p-norm over every dim but `dim` (kept with size 1 elsewhere; dim -1: all)."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.dim()
    others = tuple(i for i in range(v.dim()) if i != d)
    return v.abs().pow(pow).sum(others, keepdim=True).pow(1.0 / pow)


# --- settings ------------------------------------------------------------------------------------
_interop = [None]
_warn_always = [False]


def get_num_interop_threads() -> int:
    """Threads for inter-op parallelism (jitorch runs ops one at a time: its pool's size)."""
    return _interop[0] if _interop[0] is not None else _jt().get_num_threads()


def set_num_interop_threads(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise RuntimeError("Expected positive number of threads")
    _interop[0] = n


def init_num_threads() -> None:
    """Nothing to do: jitorch's pool starts on first use."""


def set_warn_always(b: bool) -> None:
    """Warnings PyTorch gives once are given every time when set (a flag for user code)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always[0]


# --- top-level forms of in-place methods; removed Tensor methods ---------------------------------
def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def ldexp_(input, other):
    return input.ldexp_(other)


def index_put_(input, indices, values, accumulate=False):
    return input.index_put_(indices, values, accumulate)


def resize_as_(input, the_template, *, memory_format=None):
    return input.resize_as_(the_template)


def _removed_method(name):
    from .compat_aliases import eig, lstsq, solve, symeig
    return {"eig": eig, "lstsq": lstsq, "solve": solve, "symeig": symeig}[name]


for _name in ("eig", "lstsq", "solve", "symeig"):
    setattr(Tensor, _name, _removed_method(_name))


def _as_subclass(self, cls):
    """This tensor's data as an instance of a Tensor subclass (shared storage)."""
    t = _new(cls)
    t.__dict__.update(self.__dict__)
    return t


def _dim_order(self, *, ambiguity_check=False):
    return tuple(range(self.dim()))  # jitorch tensors are row-major


Tensor.as_subclass = _as_subclass
Tensor.dim_order = _dim_order
Tensor.const_data_ptr = Tensor.data_ptr


# --- index_reduce, nonzero_static, embedding_renorm_, cond, while_loop ---------------------------
def _index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """Reduce rows of `source` into this tensor's `index` rows along `dim` ('prod', 'mean',
    'amax', 'amin'): `scatter_reduce` with the index spread over the source's shape."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = dim % max(self.dim(), 1)
    shape = [1] * source.dim()
    shape[d] = -1
    idx = index.reshape(shape).expand(tuple(source.shape))
    return self.scatter_reduce(d, idx, source, reduce, include_self=include_self)


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return self.copy_(_index_reduce(self, dim, index, source, reduce, include_self=include_self))


Tensor.index_reduce = _index_reduce
Tensor.index_reduce_ = _index_reduce_


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    r = _index_reduce(input, dim, index, source, reduce, include_self=include_self)
    return r if out is None else out.copy_(r)


def nonzero_static(input, *, size, fill_value=-1):
    """`nonzero` padded with `fill_value` (or truncated) to exactly `size` rows."""
    jt = _jt()
    nz = jt.nonzero(input)
    if nz.shape[0] >= size:
        return nz[:size]
    pad = jt.full((size - nz.shape[0], nz.shape[1]), fill_value, dtype=nz.dtype)
    return jt.cat([nz, pad], 0)


Tensor.nonzero_static = lambda self, *, size, fill_value=-1: nonzero_static(
    self, size=size, fill_value=fill_value)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale, in place, the rows named by `indices` whose norm exceeds max_norm."""
    jt = _jt()
    with jt.no_grad():
        rows = jt.unique(indices.reshape(-1))
        sel = input.index_select(0, rows)
        norms = sel.norm(norm_type, dim=1, keepdim=True)
        scale = jt.where(norms > max_norm, max_norm / (norms + 1e-7), jt.ones_like(norms))
        input.index_copy_(0, rows, sel * scale)
    return input


def cond(pred, true_fn, false_fn, operands=()):
    """`torch.cond`: true_fn(*operands) if pred else false_fn(*operands) (eager)."""
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """`torch.while_loop`: apply body_fn to the carried values while cond_fn holds (eager)."""
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        carried = tuple(body_fn(*carried))
    return carried


__all__ += ["index_reduce", "nonzero_static", "embedding_renorm_", "cond", "while_loop"]

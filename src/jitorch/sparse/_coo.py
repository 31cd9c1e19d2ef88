"""Sparse COO tensors: the `SparseTensor` type, its constructors (`sparse_coo_tensor`,
`Tensor.to_sparse`), and the sparse forms of the ops graph-network code calls on it.

A `SparseTensor` is a Tensor subclass holding `_idx` (an int64 Tensor, sparse_dim x nnz),
`_vals` (a Tensor, nnz x dense shape), `_shape` and `_coalesced`. It has no dense array: its
`_data` raises `SparseOperand` (`_layout.py`), so an op wrapper that reads it lands in
`call_sparse`, which runs the op's entry of `SPARSE_OPS` (the one table of what runs on sparse
operands; the same functions are SparseTensor's methods) or raises PyTorch's NotImplementedError
naming the op and the 'SparseCPU' backend. Dense tensors never pay for any of this.

Autograd lives in the values: a sparse tensor requires grad when its values do, the sparse
forms are built from differentiable ops on the values (`index_add`, `index_select`, ...), and
sparse @ dense is one autograd Function whose forward is a SciPy CSR product and whose backward
gives the dense operand's gradient (another sparse product, with the transposed pattern) and the
values' gradient (one gathered dot product per stored entry). A leaf sparse tensor's `.grad` is
the sparse tensor of its values' gradient on its pattern, as PyTorch's is.
"""
from __future__ import annotations

import numpy as np

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from .. import _dtype as dt
from .._device import CPU
from .._layout import SparseOperand, sparse_coo, unsupported
from .._tensor import Size, Tensor, _wrap_dim
from ..autograd.function import Function

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "spmm", "addmm", "sum", "softmax",
           "log_softmax", "call_sparse"]

_new = object.__new__


def _make(idx: Tensor, vals: Tensor, shape, coalesced: bool) -> "SparseTensor":
    s = _new(SparseTensor)
    s._idx, s._vals, s._shape, s._coalesced = idx, vals, tuple(shape), bool(coalesced)
    return s


def _is_sparse(x) -> bool:
    return type(x) is SparseTensor


def _long(arr: np.ndarray) -> Tensor:
    return Tensor._make(np.ascontiguousarray(arr, dtype=np.int64))


class SparseTensor(Tensor):
    """A sparse COO tensor (layout `jitorch.sparse_coo`); see the module docstring."""

    @property
    def _data(self):
        raise SparseOperand()

    # autograd state and dtype are the values'
    @property
    def _dtype(self):
        return self._vals._dtype

    @property
    def _version(self):
        return self._vals._version

    @property
    def _requires_grad(self):
        return self._vals._requires_grad

    @property
    def _grad_fn(self):
        return self._vals._grad_fn

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        g = self._vals._grad
        return None if g is None else _make(self._idx, g, self._shape, self._coalesced)

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            raise RuntimeError("assigning a gradient to a sparse tensor is not supported")
        self._vals._grad = None

    def retain_grad(self) -> None:
        self._vals.retain_grad()

    # --- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape))]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    nelement = numel

    @property
    def layout(self):
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _nnz(self) -> int:
        return self._vals.shape[0]

    def sparse_dim(self) -> int:
        return self._idx.shape[0]

    def dense_dim(self) -> int:
        return self._vals.dim() - 1

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        self._need_coalesced("indices")
        return self._idx

    def values(self) -> Tensor:
        self._need_coalesced("values")
        return self._vals

    def _need_coalesced(self, what):
        if not self._coalesced:
            raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                               ".coalesce() first")

    def __len__(self) -> int:
        return self._shape[0]

    # --- conversions --------------------------------------------------------------------------
    def coalesce(self) -> "SparseTensor":
        """Sorted, unique indices; duplicate entries summed (differentiably)."""
        if self._coalesced:
            return self
        idx = self._idx._data
        sd = idx.shape[0]
        flat = np.ravel_multi_index(tuple(idx), self._shape[:sd]) if idx.size else \
            np.zeros(0, np.int64)
        uniq, inv = np.unique(flat, return_inverse=True)
        new_idx = np.stack(np.unravel_index(uniq, self._shape[:sd])) if uniq.size else \
            np.zeros((sd, 0), np.int64)
        vals = self._vals.new_zeros((uniq.size,) + tuple(self._vals.shape[1:]))
        vals = vals.index_add(0, _long(inv.reshape(-1)), self._vals)
        return _make(_long(new_idx), vals, self._shape, True)

    # `new_*` of a sparse tensor follow its layout, as PyTorch's (`_layout.factory_layout`:
    # sparse zeros, or PyTorch's error for a fill)
    def new_zeros(self, *size, layout=None, **kw):
        return Tensor.new_zeros(self, *size, layout=sparse_coo if layout is None else layout,
                                **kw)

    def new_empty(self, *size, layout=None, **kw):
        return Tensor.new_empty(self, *size, layout=sparse_coo if layout is None else layout,
                                **kw)

    def new_ones(self, *size, layout=None, **kw):
        return Tensor.new_ones(self, *size, layout=sparse_coo if layout is None else layout,
                               **kw)

    def new_full(self, size, fill_value, layout=None, **kw):
        return Tensor.new_full(self, size, fill_value,
                               layout=sparse_coo if layout is None else layout, **kw)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        sd = self.sparse_dim()
        sshape, dshape = self._shape[:sd], tuple(self._shape[sd:])
        vals = self._vals if dtype is None else self._vals.to(dtype)
        idx = self._idx._data
        flat = np.ravel_multi_index(tuple(idx), sshape) if idx.size else np.zeros(0, np.int64)
        out = vals.new_zeros((int(np.prod(sshape, dtype=np.int64)),) + dshape)
        return out.index_add(0, _long(flat), vals).reshape(self._shape)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout not in (None, sparse_coo) or sparse_dim not in (None, self.sparse_dim()):
            raise NotImplementedError(unsupported("aten::to_sparse") + " (only to the same "
                                      "sparse COO layout)")
        return self

    to_sparse_coo = to_sparse

    def to(self, *args, **kwargs) -> "SparseTensor":
        from .._tensor import _parse_to
        from .._device import as_device
        dtype, dev, copy = _parse_to(args, kwargs)
        if dev is not None and as_device(dev) is not CPU:
            raise NotImplementedError(unsupported("aten::to") + f" (device {dev})")
        vals = self._vals if dtype is None else self._vals.to(dtype)
        if vals is self._vals and not copy:
            return self
        return _make(self._idx, vals if vals is not self._vals else vals.clone(), self._shape,
                     self._coalesced)

    def detach(self) -> "SparseTensor":
        return _make(self._idx, self._vals.detach(), self._shape, self._coalesced)

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def __repr__(self, *, tensor_contents=None) -> str:
        ind = repr(self._idx).replace("\n", "\n" + " " * 15)
        val = repr(self._vals.detach()).replace("\n", "\n" + " " * 14)
        size = "(" + ", ".join(map(str, self._shape)) + ("," if len(self._shape) == 1 else "") \
            + ")"
        tail = ""
        if self._vals._requires_grad:  # PyTorch names the node, or the leaf's flag
            fn = self._vals._grad_fn
            tail = ", requires_grad=True" if fn is None else f", grad_fn=<{fn.name()}>"
        return (f"tensor(indices={ind},\n       values={val},\n       size={size}, "
                f"nnz={self._nnz()}, layout=jitorch.sparse_coo{tail})")

    def __reduce_ex__(self, proto):
        raise NotImplementedError(unsupported("serialization") + " (sparse COO)")

    def __deepcopy__(self, memo):
        import copy
        return _make(copy.deepcopy(self._idx, memo), copy.deepcopy(self._vals, memo),
                     self._shape, self._coalesced)


# --- constructors ------------------------------------------------------------------------------
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """`torch.sparse_coo_tensor`: indices (sparse_dim x nnz) and values (nnz x dense shape);
    `size` defaults to the smallest that holds the indices."""
    if device is not None and _jt.device(device) != _jt.device("cpu"):
        raise NotImplementedError(unsupported("aten::_sparse_coo_tensor_with_dims_and_tensors")
                                  + f" (device {device})")
    idx = indices if isinstance(indices, Tensor) else _jt.as_tensor(indices)
    if idx.dtype.category > dt.INT:
        raise RuntimeError("indices must be an int64 tensor")
    idx = idx.detach().to(_jt.int64)
    vals = values if isinstance(values, Tensor) else _jt.as_tensor(values)
    if dtype is not None:
        vals = vals.to(dtype)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.dim() == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz x dense dims)")
    sd, nnz = idx.shape
    if nnz != vals.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {vals.shape[0]}")
    arr = idx._data
    if nnz and arr.min() < 0:
        d = int(np.nonzero(arr.min(1) < 0)[0][0])
        raise RuntimeError(f"found negative index {int(arr[d].min())} for dim {d}")
    dense = tuple(vals.shape[1:])
    if size is None:
        size = tuple(int(m) + 1 for m in arr.max(1)) if nnz else (0,) * sd
        size += dense
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense)}")
        if size[sd:] != dense:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got "
                               f"{list(vals.shape)}")
        if nnz:
            for d in range(sd):
                m = int(arr[d].max())
                if m >= size[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size "
                                       f"is {size[d]} but found index {m}")
    if requires_grad:
        vals = vals.detach().requires_grad_(True)  # a leaf sparse tensor: its own values
    return _make(idx, vals, size, bool(is_coalesced))


def zeros(shape, dtype, requires_grad: bool = False) -> "SparseTensor":
    """All-zero sparse COO tensor (no entries, every dim sparse): what `zeros(...,
    layout=sparse_coo)` makes (`_layout.factory_layout`)."""
    shape = tuple(shape)
    idx = Tensor._make(np.zeros((len(shape), 0), dtype=np.int64))
    vals = Tensor._make(np.zeros((0,), dtype=dtype.np), dtype)
    if requires_grad:
        vals.requires_grad_(True)
    return _make(idx, vals, shape, True)


def _to_sparse(self: Tensor, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """`Tensor.to_sparse`: the nonzero entries (of the first `sparse_dim` dims) of a dense
    tensor, coalesced; the values are a differentiable gather of the dense tensor."""
    if layout not in (None, sparse_coo):
        raise NotImplementedError(unsupported("aten::to_sparse") + f" (layout {layout})")
    nd = self.dim()
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= nd:
        raise RuntimeError(f"sparse_dim argument must be in [1, {nd}] range, but {sd} is given")
    mask = self.detach().numpy() != 0
    if sd < nd:
        mask = mask.any(axis=tuple(range(sd, nd)))
    nz = np.nonzero(mask)
    vals = self[tuple(_long(i) for i in nz)]
    return _make(_long(np.stack(nz)), vals, tuple(self.shape), True)


def _dense_to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    return self if dtype is None else self.to(dtype)


Tensor.to_sparse = _to_sparse
Tensor.to_sparse_coo = _to_sparse
Tensor.to_dense = _dense_to_dense


# --- sparse @ dense ----------------------------------------------------------------------------
_SCIPY_DTYPES = (np.float32, np.float64, np.complex64, np.complex128, np.int64, np.int32,
                 np.int16, np.int8, np.uint8)


class _SpMM(Function):
    """(rows, cols, values) of an (n x m) matrix times a dense (m x k) matrix."""

    @staticmethod
    def forward(ctx, values, dense, rows, cols, shape):
        ctx.save_for_backward(values, dense)
        ctx.pattern = (rows, cols, shape)
        v, d = values._data, dense._data
        cast = v.dtype.type not in _SCIPY_DTYPES  # half, bfloat16: computed in float32
        if cast:
            v, d = v.astype(np.float32), d.astype(np.float32)
        import scipy.sparse as _sp  # (imported on use: it is heavy for `import jitorch`)
        a = _sp.csr_matrix((v, (rows, cols)), shape=shape)
        out = np.asarray(a @ d)
        return Tensor._make(out.astype(values._data.dtype) if cast else out, values._dtype)

    @staticmethod
    def backward(ctx, g):
        values, dense = ctx.saved_tensors
        rows, cols, (n, m) = ctx.pattern
        gv = gd = None
        if ctx.needs_input_grad[0]:
            gv = (g.index_select(0, _long(rows)) * dense.index_select(0, _long(cols))).sum(-1)
        if ctx.needs_input_grad[1]:
            gd = _SpMM.apply(values, g, cols, rows, (m, n))
        return gv, gd, None, None, None


def _spmm(s: "SparseTensor", dense: Tensor) -> Tensor:
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise NotImplementedError(unsupported("aten::mm") + " (a hybrid sparse tensor: "
                                  f"sparse_dim {s.sparse_dim()}, dense_dim {s.dense_dim()})")
    if not isinstance(dense, Tensor):
        raise TypeError(f"mm(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{type(dense).__name__}")
    if dense.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {dense.dim()}-D tensor")
    if dense.shape[0] != s._shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._shape[1]}, "
                           f"got {dense.shape[0]}")
    if dense.dtype is not s.dtype:
        from .._ops.registry import _pt_name
        raise RuntimeError(f"expected scalar type {_pt_name(s.dtype)} but found "
                           f"{_pt_name(dense.dtype)}")
    idx = s._idx._data
    return _SpMM.apply(s._vals, dense, idx[0], idx[1], s._shape)


def _spgemm(a: "SparseTensor", b: "SparseTensor") -> "SparseTensor":
    """sparse @ sparse -> sparse (coalesced), by SciPy; gradients are not provided."""
    if a._requires_grad or b._requires_grad:
        raise NotImplementedError(unsupported("aten::mm") + " (gradients of sparse @ sparse)")
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x"
                           f"{a._shape[1]} and {b._shape[0]}x{b._shape[1]})")
    import scipy.sparse as _sp
    mats = [_sp.csr_matrix((s._vals._data, tuple(s._idx._data)), shape=s._shape)
            for s in (a, b)]
    c = (mats[0] @ mats[1]).tocoo()
    c.sum_duplicates()  # row-major sorted, unique: coalesced
    return _make(_long(np.stack([c.row, c.col])), Tensor._make(c.data.astype(
        a._vals._data.dtype)), c.shape, True)


def mm(input, mat2):
    """`torch.sparse.mm` / `torch.mm` with sparse operands: sparse @ dense -> dense (gradients
    for the dense operand and the values), dense @ sparse -> dense, sparse @ sparse ->
    sparse."""
    if _is_sparse(input):
        return _spgemm(input, mat2) if _is_sparse(mat2) else _spmm(input, mat2)
    return _spmm(_t(mat2), input.t()).t()  # D @ S = (S^T @ D^T)^T


def matmul(input, other):
    """`torch.matmul` / `@` with a sparse operand: matrices as `mm`; a sparse matrix times a
    vector gives a vector."""
    if _is_sparse(input) and not _is_sparse(other) and isinstance(other, Tensor) \
            and other.dim() == 1:
        return _spmm(input, other.unsqueeze(1)).squeeze(1)
    return mm(input, other)


spmm = mm


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """`torch.sparse.addmm` / `torch.addmm` with a sparse operand: beta * input + alpha *
    (mat1 @ mat2), dense."""
    prod = mm(mat1, mat2)
    prod = prod.to_dense() if _is_sparse(prod) else prod
    if _is_sparse(input):
        input = input.to_dense()
    return (input if beta == 1 else input * beta) + (prod if alpha == 1 else prod * alpha)


# --- elementwise and reductions ----------------------------------------------------------------
def _same_size(a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a.shape)} != {list(b.shape)}")


def _add(input, other, *, alpha=1):
    if _is_sparse(input) and _is_sparse(other):
        _same_size(input, other)
        d = dt.promote_types(input.dtype, other.dtype)
        ov = other._vals if alpha == 1 else other._vals * alpha
        r = _make(_jt.cat([input._idx, other._idx], 1),
                  _jt.cat([input._vals.to(d), ov.to(d)]), input._shape, False)
        # PyTorch merges two coalesced operands into a coalesced sum
        return r.coalesce() if input._coalesced and other._coalesced else r
    if _is_sparse(input):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if isinstance(input, Tensor):
        _same_size(input, other)
    return _jt.add(input, other.to_dense(), alpha=alpha)


def _sub(input, other, *, alpha=1):
    return _add(input, other, alpha=-alpha)


def _scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex, np.number)) or (
        isinstance(x, Tensor) and not _is_sparse(x) and x.dim() == 0)


def _mul(input, other):
    if not _is_sparse(input):
        input, other = other, input
    if _scalar(other):
        return _make(input._idx, input._vals * other, input._shape, input._coalesced)
    if _is_sparse(other):  # the intersection of the two patterns
        _same_size(input, other)
        a, b = input.coalesce(), other.coalesce()
        sa, sb = (np.ravel_multi_index(tuple(s._idx._data), s._shape[:s.sparse_dim()])
                  for s in (a, b))
        common, ia, ib = np.intersect1d(sa, sb, assume_unique=True, return_indices=True)
        vals = a._vals.index_select(0, _long(ia)) * b._vals.index_select(0, _long(ib))
        return _make(a._idx.index_select(1, _long(ia)), vals, a._shape, True)
    if tuple(other.shape) != input._shape:
        raise NotImplementedError(unsupported("aten::mul") + " (a sparse tensor times a dense "
                                  "one of another shape)")
    gathered = other[tuple(_long(i) for i in input._idx._data)]
    return _make(input._idx, input._vals * gathered, input._shape, input._coalesced)


def _div(input, other, *, rounding_mode=None):
    if not (_is_sparse(input) and _scalar(other)) or rounding_mode is not None:
        raise NotImplementedError(unsupported("aten::div") + " (only a sparse tensor divided "
                                  "by a number)")
    return _make(input._idx, input._vals / other, input._shape, input._coalesced)


def _neg(input):
    return _make(input._idx, -input._vals, input._shape, input._coalesced)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """`torch.sparse.sum` (and `Tensor.sum` on a sparse tensor): over all dims, a dense scalar;
    over some dims, a sparse tensor (coalesced), or dense once no sparse dim is left."""
    vals = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return vals.sum()
    if keepdim:
        raise NotImplementedError(unsupported("aten::sum") + " (keepdim=True)")
    dims = {_wrap_dim(d, input.dim()) for d in ((dim,) if isinstance(dim, int) else dim)}
    sd = input.sparse_dim()
    dense_axes = sorted(d - sd + 1 for d in dims if d >= sd)
    if dense_axes:
        vals = vals.sum(dense_axes)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:
        return vals.sum(0)
    shape = [input._shape[d] for d in keep] + [s for d, s in enumerate(input._shape)
                                               if d >= sd and d not in dims]
    return _make(_long(input._idx._data[keep]), vals, shape, False).coalesce()


def _t(input):
    if input.sparse_dim() > 2 or input.dense_dim() != 0:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                           f"self is {input.sparse_dim()} sparse and {input.dense_dim()} dense")
    return input if input.dim() < 2 else _transpose(input, 0, 1)


def _transpose(input, dim0, dim1):
    nd, sd = input.dim(), input.sparse_dim()
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    shape = list(input._shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 == d1:
        return input
    if d0 < sd and d1 < sd:
        order = list(range(sd))
        order[d0], order[d1] = d1, d0
        return _make(_long(input._idx._data[order]), input._vals, shape, False)
    if d0 >= sd and d1 >= sd:
        return _make(input._idx, input._vals.transpose(d0 - sd + 1, d1 - sd + 1), shape,
                     input._coalesced)
    raise RuntimeError(f"transpose(): can't transpose a sparse dimension with a dense one "
                       f"(dims {d0} and {d1}, sparse_dim {sd})")


def _clone(input, *, memory_format=None):
    return _make(input._idx.clone(), input._vals.clone(), input._shape, input._coalesced)


def _groups(s: "SparseTensor", dim: int):
    """Per entry, the id of its slice along `dim` (entries sharing all other indices)."""
    idx = s._idx._data
    other = [d for d in range(idx.shape[0]) if d != dim]
    if not other:
        return np.zeros(idx.shape[1], np.int64), 1
    flat = np.ravel_multi_index(tuple(idx[other]), tuple(s._shape[d] for d in other))
    uniq, inv = np.unique(flat, return_inverse=True)
    return inv.reshape(-1), uniq.size


def _softmax_parts(input, dim, dtype):
    if input.dense_dim() != 0:
        raise NotImplementedError(unsupported("aten::_sparse_softmax") + " (hybrid tensors)")
    s = input.coalesce()
    v = s._vals if dtype is None else s._vals.to(dtype)
    g, n = _groups(s, _wrap_dim(dim, s.dim()))
    gt = _long(g)
    # the per-slice maximum, a constant shift that keeps exp finite (it cancels in the result)
    mx = np.full(n, -np.inf, v._data.dtype)
    np.maximum.at(mx, g, v.detach()._data)
    shifted = v - Tensor._make(mx[g])
    total = shifted.new_zeros(n).index_add(0, gt, shifted.exp())
    return s, shifted, total.index_select(0, gt)


def softmax(input, dim, dtype=None):
    """`torch.sparse.softmax`: softmax over the stored entries of each slice along `dim`
    (unstored entries count as -inf), a sparse tensor of the same pattern."""
    s, shifted, total = _softmax_parts(input, dim, dtype)
    return _make(s._idx, shifted.exp() / total, s._shape, True)


def log_softmax(input, dim, dtype=None):
    """`torch.sparse.log_softmax`, as `softmax`."""
    s, shifted, total = _softmax_parts(input, dim, dtype)
    return _make(s._idx, shifted - total.log(), s._shape, True)


# --- the one table of ops that run on sparse operands ------------------------------------------
SPARSE_OPS = {"mm": mm, "matmul": matmul, "addmm": addmm, "add": _add, "sub": _sub, "mul": _mul,
              "div": _div, "neg": _neg, "sum": sum, "t": _t, "transpose": _transpose,
              "clone": _clone}

for _name, _fn in SPARSE_OPS.items():
    setattr(SparseTensor, _name, _fn)
SparseTensor.__matmul__ = matmul
SparseTensor.__rmatmul__ = lambda self, other: matmul(other, self)
SparseTensor.__add__ = lambda self, other: _add(self, other)
SparseTensor.__radd__ = lambda self, other: _add(other, self)
SparseTensor.__sub__ = lambda self, other: _sub(self, other)
SparseTensor.__rsub__ = lambda self, other: _add(other, self, alpha=-1)
SparseTensor.__mul__ = SparseTensor.__rmul__ = lambda self, other: _mul(self, other)
SparseTensor.__truediv__ = lambda self, other: _div(self, other)
SparseTensor.__neg__ = _neg
SparseTensor.T = property(_t)


def call_sparse(name: str, slots: tuple, attrs: dict):
    """An op reached with a sparse operand (`_ops/registry.py`): its sparse form, or PyTorch's
    NotImplementedError naming the op."""
    fn = SPARSE_OPS.get(name)
    if fn is None:
        raise NotImplementedError(unsupported(f"aten::{name}"))
    return fn(*slots, **attrs)

"""PyTorch's top-level forms of functional ops, its `*_copy` functions, NumPy-computed helpers
(histogram), the Tensor methods that are aliases (prelu, unsafe_split, the in-place shape ops
squeeze_/t_/transpose_...), igamma/igammac (registry ops, also `special.gammainc`/`gammaincc`),
and the functions PyTorch 2 removed (issue 19). Thin wrappers over the registry ops and
`nn.functional`, with PyTorch's argument orders (`torch.embedding(weight, indices)`) and integer
reductions (0 none, 1 mean, 2 sum).
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .registry import defop

__all__ = ["dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "feature_dropout", "feature_dropout_", "layer_norm",
           "group_norm", "batch_norm", "rms_norm", "embedding", "celu", "celu_", "selu",
           "selu_", "threshold", "threshold_", "hardshrink", "rrelu", "rrelu_", "bilinear",
           "kl_div", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss", "native_channel_shuffle", "constant_pad_nd", "convolution",
           "rsub", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "histogram",
           "histogramdd", "cholesky_inverse", "igamma", "igammac", "typename", "is_storage",
           "get_device", "frombuffer", "solve", "eig", "symeig", "lstsq", "matrix_rank",
           "nuclear_norm", "frobenius_norm", "range"]

_RED = {0: "none", 1: "mean", 2: "sum"}
_SCIPY = "a SciPy special function: no Numba lowering"


def _float_kernel(name):
    def rule(d):
        if d.category != dt.FLOAT:
            from .registry import _pt_name
            raise RuntimeError(f'"{name}_cpu" not implemented for \'{_pt_name(d)}\'')
        return d, d
    return rule


def _F():
    import jitorch.nn.functional as F
    return F


def _jt():
    import jitorch
    return jitorch


def _red(r):
    return _RED.get(r, r)


# --- functional ops under their top-level names --------------------------------------------------
def dropout(input, p, train):
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    """Channel-wise dropout of (N, C, *) input (the 2-D/3-D dropouts' core)."""
    return _F().dropout2d(input, p, train) if input.dim() == 4 else \
        _F().dropout3d(input, p, train) if input.dim() == 5 else _F().dropout1d(input, p, train)


def feature_dropout_(input, p, train):
    return input.copy_(feature_dropout(input, p, train))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """PyTorch's low-level form: weight first, padding_idx -1 for none."""
    return _F().embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def celu(input, alpha=1.0):
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    return _F().celu_(input, alpha)


def selu(input):
    return _F().selu(input)


def selu_(input):
    return _F().selu_(input)


def threshold(input, threshold, value):
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _F().threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu_(input, lower, upper, training)


def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_red(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_red(reduction),
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=_red(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_red(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_red(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_red(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=1):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_red(reduction))


def native_channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, tuple(pad), value=value)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """The generic convolution: conv1/2/3d or conv_transpose1/2/3d by the weight's rank."""
    F = _F()
    nd = weight.dim() - 2
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    return _jt().sub(other, input, alpha=alpha) if isinstance(other, Tensor) else \
        (input * -alpha) + other


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


# --- NumPy-computed helpers without gradients ----------------------------------------------------
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges) of a float tensor (torch.histogram's CPU semantics: NumPy's)."""
    from .. import return_types
    t = return_types.make("histogram", ("hist", "bin_edges"))
    jt = _jt()
    x = input.detach().numpy().ravel()
    b = bins.detach().numpy() if isinstance(bins, Tensor) else bins
    w = None if weight is None else weight.detach().numpy().ravel()
    h, e = np.histogram(x, b, range=range, weights=w, density=density)
    return t(jt.tensor(h.astype(x.dtype)), jt.tensor(e.astype(x.dtype)))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """(hist, bin_edges list) of the rows of an (N, D) tensor."""
    from .. import return_types
    t = return_types.make("histogramdd", ("hist", "bin_edges"))
    jt = _jt()
    x = input.detach().numpy()
    x2 = x.reshape(-1, x.shape[-1])
    b = [e.detach().numpy() for e in bins] if isinstance(bins, (list, tuple)) and bins and \
        isinstance(bins[0], Tensor) else bins
    rng = None if range is None else list(zip(range[0::2], range[1::2]))
    w = None if weight is None else weight.detach().numpy().ravel()
    h, edges = np.histogramdd(x2, b, range=rng, weights=w, density=density)
    return t(jt.tensor(h.astype(x.dtype)), [jt.tensor(e.astype(x.dtype)) for e in edges])


def cholesky_inverse(L, upper=False, *, out=None):
    """(L L^H)^-1 (or (U^H U)^-1) from a Cholesky factor."""
    jt = _jt()
    n = L.shape[-1]
    eye = jt.eye(n, dtype=L.dtype).expand(tuple(L.shape))
    r = jt.cholesky_solve(eye, L, upper)
    return r if out is None else out.copy_(r)


def _gammainc(input, other):
    """The regularised lower incomplete gamma function P(input, other)."""
    from scipy import special
    return special.gammainc(input, other)


def _gammaincc(input, other):
    """The regularised upper incomplete gamma function Q(input, other) = 1 - P."""
    from scipy import special
    return special.gammaincc(input, other)


def _d_other(other, input):
    """d P(a, x) / dx = x^(a - 1) e^-x / Gamma(a) (PyTorch differentiates only x)."""
    return ((input - 1) * other.log() - other - input.lgamma()).exp()


igamma = defop("igamma", _gammainc, tensors=("input", "other"), kind="elementwise",
               dtype=_float_kernel("igamma"), inplace=True, interpreted=_SCIPY,
               vjp=lambda g, input, other: (None, g * _d_other(other, input)),
               jvp=lambda t_other, input, other: t_other * _d_other(other, input))
igammac = defop("igammac", _gammaincc, tensors=("input", "other"), kind="elementwise",
                dtype=_float_kernel("igammac"), inplace=True, interpreted=_SCIPY,
                vjp=lambda g, input, other: (None, -g * _d_other(other, input)),
                jvp=lambda t_other, input, other: -t_other * _d_other(other, input))


def typename(obj):
    """PyTorch's type name: 'torch.FloatTensor' for a float32 tensor."""
    if isinstance(obj, Tensor):
        names = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}
        return f"torch.{names.get(obj.dtype.name if hasattr(obj.dtype, 'name') else '', '')}" \
               f"Tensor"
    module = type(obj).__module__
    qual = type(obj).__qualname__
    return qual if module in ("builtins", None) else f"{module}.{qual}"


def is_storage(obj):
    return False  # jitorch tensors own NumPy arrays: no storage objects


def get_device(input):
    return input.get_device()


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing a Python buffer's memory."""
    jt = _jt()
    arr = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    return jt.from_numpy(arr).requires_grad_(requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated: [start, end] inclusive (default dtype float)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    jt = _jt()
    n = int(np.floor((end - start) / step)) + 1
    vals = start + step * np.arange(builtins.max(n, 0))
    return jt.tensor(vals, dtype=dtype or jt.get_default_dtype(), device=device,
                     requires_grad=requires_grad)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    la = _jt().linalg
    r = la.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim, keepdim=keepdim)
    return r if out is None else out.copy_(r)


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    r = _jt().linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)
    return r if out is None else out.copy_(r)


# --- functions PyTorch 2 removed: the same RuntimeError ------------------------------------------
def _removed(name, replacement):
    def fn(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. "
                           f"{replacement}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Removed from PyTorch: raises its RuntimeError ({replacement})"
    return fn


solve = _removed("solve", "`torch.linalg.solve` has its arguments reversed and does not "
                          "return the LU factorization.")
eig = _removed("eig", "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
                      "`cdouble` rather than real tensors mimicking complex tensors.")
symeig = _removed("symeig", "Please use `torch.linalg.eigh` instead.")
lstsq = _removed("lstsq", "`torch.linalg.lstsq` has its arguments reversed and does not "
                          "return the QR decomposition in the returned tuple.")
matrix_rank = _removed("matrix_rank", "Please use `torch.linalg.matrix_rank` instead.")


# --- the *_copy functions: the view op's result, copied ------------------------------------------
def _slice(input, dim=0, start=None, end=None, step=1):
    return input[(slice(None),) * (dim % input.dim()) + (slice(start, end, step),)]


def _make_copy(name, view):
    def fn(input, *args, out=None, **kwargs):
        r = view(input, *args, **kwargs)
        r = [t.clone() for t in r] if isinstance(r, (tuple, list)) else r.clone()
        return r if out is None else out.copy_(r)
    fn.__name__ = fn.__qualname__ = name + "_copy"
    fn.__doc__ = f"`{name}`'s result as a new tensor (no shared memory)."
    return fn


def _views() -> dict:
    from .complex_ops import view_as_complex, view_as_real
    out = {name: getattr(Tensor, name) for name in (
        "detach", "diagonal", "expand", "narrow", "permute", "select", "split",
        "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze",
        "view")}
    out.update({"alias": lambda input: input, "slice": _slice, "view_as_real": view_as_real,
                "view_as_complex": view_as_complex})
    return out


_COPIES = {name + "_copy": _make_copy(name, view) for name, view in _views().items()}
globals().update(_COPIES)
__all__ += sorted(_COPIES)


# --- Tensor methods ------------------------------------------------------------------------------
def _shape_inplace(name):
    """x.squeeze_(...) etc.: the view's shape written into x (x keeps its memory)."""
    def fn(self, *args, **kwargs):
        if self.requires_grad:
            raise NotImplementedError(f"jitorch: {name}_ on a tensor that requires grad is not "
                                      f"implemented (use the out-of-place {name})")
        self._data = getattr(self, name)(*args, **kwargs)._data
        self._version[0] += 1
        return self
    fn.__name__ = fn.__qualname__ = name + "_"
    return fn


def _apply_(self, callable):
    """Apply a Python function to each element in place (CPU, no autograd: as PyTorch)."""
    flat = self._data.reshape(-1)
    for i, v in enumerate(flat.tolist()):
        flat[i] = callable(v)
    return self


def _map_(self, tensor, callable):
    other = np.broadcast_to(tensor._data, self._data.shape).reshape(-1).tolist()
    flat = self._data.reshape(-1)
    for i, (a, b) in enumerate(zip(flat.tolist(), other)):
        flat[i] = callable(a, b)
    return self


def _polygamma_(self, n):
    return self.copy_(_jt().polygamma(n, self))


for _name, _fn in (
        ("squeeze_", _shape_inplace("squeeze")), ("unsqueeze_", _shape_inplace("unsqueeze")),
        ("t_", _shape_inplace("t")), ("transpose_", _shape_inplace("transpose")),
        ("swapaxes_", _shape_inplace("swapaxes")), ("swapdims_", _shape_inplace("swapdims")),
        ("apply_", _apply_), ("map_", _map_), ("polygamma_", _polygamma_),
        ("prelu", lambda self, weight: _F().prelu(self, weight)),
        ("hardshrink", lambda self, lambd=0.5: _F().hardshrink(self, lambd)),
        ("cholesky_inverse", cholesky_inverse), ("histogram", histogram),
        ("unsafe_chunk", unsafe_chunk), ("unsafe_split", unsafe_split),
        ("unsafe_split_with_sizes", unsafe_split_with_sizes),
        ("new_empty_strided", lambda self, size, stride, **kw: self.new_empty(tuple(size), **kw)),
        ("share_memory_", lambda self: self),  # (a NumPy array: nothing to move)
        ("is_shared", lambda self: False), ("narrow_copy", _COPIES["narrow_copy"])):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)

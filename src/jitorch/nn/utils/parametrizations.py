"""`jitorch.nn.utils.parametrizations`: `weight_norm`, `spectral_norm` and `orthogonal` as
parametrizations (`nn.utils.parametrize`), with PyTorch's modules, buffers and state-dict keys
(`parametrizations.weight.original0/1`, `parametrizations.weight.0._u/_v`, `...0.base`).

The formulas are PyTorch's: weight_norm is `g * v / ||v||` (from `utils/weight_norm.py`);
spectral_norm runs power iteration on `_u`/`_v` in training (u first, then v; 15 steps at
registration) and divides by sigma = u . (W v); orthogonal maps a matrix through
`matrix_exp` or the Cayley map of its skew part, or through Householder reflectors, times the
orthogonal `base` that `right_inverse` stores (the trivialization).
"""
from __future__ import annotations

from enum import Enum, auto

import numpy as np

from ... import _dtype as dt
from ... import autograd
from ..._creation import eye, zeros_like
from ..._ops.join import cat
from ..._ops.linalg_exp import householder_product
from ..._ops.linalg_decomp import linalg_qr, solve
from ..._ops.nn_norm import normalize
from ..._random import randn
from ..._tensor import Tensor
from ..modules.module import Module
from . import parametrize
from .spectral_norm import default_dim, reshape_weight_to_matrix
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# --- weight_norm -----------------------------------------------------------------------------
class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """`module.<name>` = g * v / ||v|| with g = `original0`, v = `original1`."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        # a state dict saved with the hook form (`weight_g`, `weight_v`) loads into this one
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# --- spectral_norm ---------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_weight_to_matrix(weight, self.dim)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with autograd.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = reshape_weight_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the next power iteration writes the buffers, which backward must not see
        u, v = self._u.clone(), self._v.clone()
        sigma = u.conj().dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """`module.<name>` divided by its spectral norm (power iteration on buffers `_u`, `_v`)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = default_dim(module) if dim is None else dim
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# --- orthogonal ------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    ident = eye(k, dtype=q.dtype)
    eps = 10.0 * n * dt.finfo(q.dtype).eps
    return bool((q.mH @ q).allclose(ident, atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR decomposition whose R has a positive diagonal (PyTorch's geqrf +
    householder_product + sign fix; that Q is unique for full-rank `a`)."""
    q, r = linalg_qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(a: Tensor):
    """LAPACK's geqrf (reflectors below the diagonal, R above, and tau), per matrix."""
    arr = a.detach().numpy()
    flat = arr.reshape((-1,) + arr.shape[-2:])
    import scipy.linalg  # (imported on use: it is heavy for `import jitorch`)
    outs, taus = [], []
    for m in flat:
        (qr, tau), _r = scipy.linalg.qr(m, mode="raw")
        outs.append(qr)
        taus.append(tau)
    return (Tensor._make(np.stack(outs).reshape(arr.shape).astype(arr.dtype), a.dtype),
            Tensor._make(np.stack(taus).reshape(arr.shape[:-2] + (-1,)).astype(arr.dtype),
                         a.dtype))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = A.matrix_exp()
            else:
                ident = eye(n, dtype=A.dtype)
                Q = solve(ident - 0.5 * A, ident + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # the signs of X's diagonal pick each column's reflection
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with autograd.no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations when "
                                              "use_trivialization=False.")
                A, tau = _geqrf(Q)
                # the diagonal keeps only the sign of each reflection (forward's `.int()`)
                d = A.diagonal(dim1=-2, dim2=-1)
                d.copy_(d.sign() * (1 - 2 * (tau == 0.0).to(d.dtype)))
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            # base @ forward(-Id) = base: forward maps -Id to the identity for every map
            neg_id = zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` (a matrix or batch) to be orthogonal (unitary)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.shape[-2] == weight.shape[-1]
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module

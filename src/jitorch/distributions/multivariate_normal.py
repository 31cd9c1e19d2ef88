"""The Gaussian families over vectors: MultivariateNormal (by covariance, precision or
lower-Cholesky scale) and LowRankMultivariateNormal (covariance W W^T + diag(D), whose solves
and log-determinants go through the m x m capacitance matrix I + W^T D^-1 W).

Both keep their factor unbroadcast (`_unbroadcasted_scale_tril`, `_unbroadcasted_cov_factor`)
and expand the derived matrices lazily, as PyTorch does.
"""
from __future__ import annotations

import math

import jitorch
from . import constraints
from .distribution import Distribution
from .utils import _normal, lazy_property

__all__ = ["LowRankMultivariateNormal", "MultivariateNormal"]


def _batch_mv(bmat, bvec):
    return jitorch.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _solve_tril(L, b):
    """L^-1 b for lower-triangular L (batched and broadcast; b a batch of vectors)."""
    shape = jitorch.broadcast_shapes(tuple(L.shape[:-2]), tuple(b.shape[:-1]))
    n = L.shape[-1]
    Lb = L.expand(tuple(shape) + (n, n))
    return jitorch.linalg.solve(Lb, b.expand(tuple(shape) + (n,)).unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x over the batch."""
    return _solve_tril(bL, bx).pow(2).sum(-1)


def _precision_to_scale_tril(P):
    return jitorch.linalg.cholesky(jitorch.linalg.inv(P))


class _GaussianVector(Distribution):
    """What the Gaussian vector families share: the mean and mode are `loc`, and the entropy
    follows from half the log-determinant of the covariance (`_half_log_det`)."""
    support = constraints.real_vector
    has_rsample = True

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)


class MultivariateNormal(_GaussianVector):
    """N(loc, Sigma) with Sigma given as `covariance_matrix`, `precision_matrix` or
    `scale_tril` (exactly one)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    _unbatched = ("_unbroadcasted_scale_tril",)

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is None:
                continue
            if m.dim() < 2:
                raise ValueError(f"{'scale_tril matrix' if name == 'scale_tril' else name} "
                                 "must be at least two-dimensional, with optional leading "
                                 "batch dimensions")
            batch_shape = jitorch.broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
            setattr(self, name, m.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = jitorch.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return jitorch.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        return jitorch.linalg.inv(jitorch.matmul(L, L.mT)).expand(self._matrix_shape())

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _normal(shape, self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return (-0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M)
                - self._half_log_det())



def _capacitance_tril(W, D):
    """Cholesky of I + W^T D^-1 W."""
    m = W.size(-1)
    K = jitorch.matmul(W.mT / D.unsqueeze(-2), W) + jitorch.eye(m, dtype=W.dtype)
    return jitorch.linalg.cholesky(K)


class LowRankMultivariateNormal(_GaussianVector):
    """N(loc, W W^T + diag(D)) with `cov_factor` W (n x m) and `cov_diag` D."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    _unbatched = ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril")

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = jitorch.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand(tuple(self._batch_shape)
                                             + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        n = self._event_shape[0]
        d_sqrt = D.sqrt().unsqueeze(-1)
        dinvsqrt_W = W / d_sqrt
        K = jitorch.matmul(dinvsqrt_W, dinvsqrt_W.mT) + jitorch.eye(n, dtype=W.dtype)
        return (d_sqrt * jitorch.linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (jitorch.matmul(W, W.mT) + jitorch.diag_embed(D)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        A = jitorch.linalg.solve(self._capacitance_tril.expand(
            tuple(Wt_Dinv.shape[:-2]) + tuple(self._capacitance_tril.shape[-2:])), Wt_Dinv)
        return (jitorch.diag_embed(D.reciprocal())
                - jitorch.matmul(A.mT, A)).expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        W = self._unbroadcasted_cov_factor
        eps_W = _normal(tuple(shape[:-1]) + tuple(W.shape[-1:]), self.loc)
        eps_D = _normal(shape, self.loc)
        return (self.loc + _batch_mv(W, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        C, D = self._capacitance_tril, self._unbroadcasted_cov_diag
        return 2 * C.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        x = value - self.loc
        # Woodbury: x^T (W W^T + D)^-1 x = x^T D^-1 x - |C^-1 W^T D^-1 x|^2
        Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
        M = (x.pow(2) / D).sum(-1) - _batch_mahalanobis(self._capacitance_tril, Wt_Dinv_x)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def _half_log_det(self):
        return 0.5 * self._log_det()

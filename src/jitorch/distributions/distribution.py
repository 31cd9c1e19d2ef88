"""`Distribution`: the base class of every family in jitorch.distributions.

Owns the shapes (`batch_shape`, `event_shape`, `_extended_shape`), argument validation (the
class-wide default `set_default_validate_args`, per-instance `validate_args`, the parameter and
`log_prob`-value checks with PyTorch's ValueError messages), the generic `expand` (every tensor
attribute laid out as batch_shape + trailing dims is expanded; families holding other
distributions override it), `sample` as `rsample` without gradient, and the repr.
"""
from __future__ import annotations

import warnings

import jitorch
from . import constraints
from .constraints import _fmt
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    # attributes `expand` leaves alone (not laid out as batch_shape + trailing dims)
    _unbatched = ()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Set whether validation is on by default (it is, as in PyTorch, unless `python -O`)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = jitorch.Size(batch_shape)
        self._event_shape = jitorch.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # depends on other parameters: cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             lazy_property):
                    continue  # derived lazily from another parameter, which was checked
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{_fmt(value)}")

    # ---- shapes ----------------------------------------------------------------------------
    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return jitorch.Size(tuple(sample_shape) + tuple(self._batch_shape)
                            + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """A view of this distribution with parameters expanded to `batch_shape` (no copies,
        no re-validation)."""
        batch_shape = jitorch.Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        old = tuple(self._batch_shape)
        for name, value in self.__dict__.items():
            if name in self._unbatched:
                pass
            elif (isinstance(value, jitorch.Tensor) and value.dim() >= len(old)
                    and tuple(value.shape[:len(old)]) == old):
                value = value.expand(tuple(batch_shape) + tuple(value.shape[len(old):]))
            elif (isinstance(value, Distribution)
                    and tuple(value.batch_shape[:len(old)]) == old):
                # a part (Beta's Dirichlet, a mixture's components, Independent's base)
                value = value.expand(tuple(batch_shape) + tuple(value.batch_shape[len(old):]))
            new.__dict__.setdefault(name, value)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # ---- the interface ---------------------------------------------------------------------
    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        with jitorch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(jitorch.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return jitorch.exp(self.entropy())

    def _validate_sample(self, value):
        if not isinstance(value, jitorch.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = jitorch.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{_fmt(value)}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {_fmt(v) if v.numel() == 1 else v.size()}"
            for p, v in ((p, self.__dict__[p]) for p in names))
        return self.__class__.__name__ + "(" + args + ")"

"""Grad modes: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`.

Owns the thread-local "grad enabled" flag read by dispatch on every op (like PyTorch's, it is
per thread), and the process-wide forward-AD level counter used by `forward_ad`.
"""
from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True
    inference = False


_state = _GradState()
_fwd_level = [0]  # > 0 while a forward_ad.dual_level is open


def is_grad_enabled() -> bool:
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _DecoratorContext:
    """Context manager that also works as a decorator (with or without parentheses)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args: tuple = ()


class no_grad(_DecoratorContext):
    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):  # used as @no_grad without parentheses
            return self.__call__(fn)
        return self

    def __init__(self, fn=None):
        pass

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = False

    def __exit__(self, *exc):
        _state.enabled = self._prev


class enable_grad(no_grad):
    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = True


class set_grad_enabled(_DecoratorContext):
    def __init__(self, mode: bool):
        self._args = (mode,)
        self._prev = _state.enabled
        _state.enabled = bool(mode)  # takes effect immediately, like torch.set_grad_enabled(False)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self._prev

    def __call__(self, fn):
        _state.enabled = self._prev  # as a decorator it must not change the mode now
        return super().__call__(fn)


class inference_mode(_DecoratorContext):
    """Like `no_grad`; tensors made inside are marked so they cannot join autograd later."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self._args = (True,)
            return self.__call__(mode)
        return self

    def __init__(self, mode: bool = True):
        if callable(mode):
            mode = True
        self._args = (mode,)
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled, _state.inference = False, True

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev

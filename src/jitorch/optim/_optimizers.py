"""The optimizer classes: argument validation and defaults (PyTorch's), lazy state creation in
PyTorch's state_dict layout, and per-group calls of the functional forms through `CompiledStep`.

The math is not here: it lives once in `functional.py`. A class only gathers, for each param
group, the params that have a grad with their state tensors and calls the compiled form; tensors
whose step count differs (a param that skipped steps) go in separate calls, because the step is
a Python scalar of the call. Complex params are handed over as `view_as_real` views, as PyTorch
does, so the real-valued math applies.
"""
from __future__ import annotations

import numpy as np

from .. import _creation as C
from .._dtype import COMPLEX as _COMPLEX
from .._tensor import Tensor
from . import functional as F
from .optimizer import CompiledStep, Optimizer

__all__ = ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam"]


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def _check_common(lr, eps=None, weight_decay=None, betas=None):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _check(0.0 <= lr, f"Invalid learning rate: {lr}")
    if eps is not None:
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
    if betas is not None:
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay is not None:
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")


def _check_flags(foreach, fused, differentiable):
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _real(t: Tensor) -> Tensor:
    if t._dtype.category != _COMPLEX:
        return t
    from .. import view_as_real
    return view_as_real(t)


def _reals(ts: list) -> list:
    """`[_real(t) for t in ts]`, the list itself when nothing is complex (the usual case: a
    step's Python overhead is per tensor)."""
    for t in ts:
        if t._dtype.category == _COMPLEX:
            return [_real(x) for x in ts]
    return ts


def _incr(t):
    """`t += 1` for a state's step. A plain 0-d tensor (PyTorch's float32 step) is bumped in
    its array, as the in-place op would (same float32 sum, version counter bumped), without
    the eager dispatch: a per-parameter Python op is a large part of a compiled step."""
    d = getattr(t, "_data", None)
    if type(t) is Tensor and type(d) is np.ndarray and d.ndim == 0 and \
            not t._requires_grad and d.flags.writeable:
        d[()] = d[()] + 1  # in the array's dtype (float32 for PyTorch's step), as `t += 1`
        t._version[0] += 1
        return t
    t += 1
    return t


def _step_value(state) -> float:
    st = state.get("step", 0.0)
    if type(st) is Tensor and st._data.ndim == 0:
        return float(st._data)
    return _f(st)


def _runs(items, key):
    """Consecutive-order groups of `items` by `key(item)` (one functional call each)."""
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out.items()


def _f(x) -> float:
    return float(x.item() if isinstance(x, Tensor) else x)


def _step_tensor() -> Tensor:
    return C.tensor(0.0)


def _zeros(p: Tensor) -> Tensor:
    return C.zeros_like(p)


class _Base(Optimizer):
    """Shared loop: per group, params with grads -> state lists -> one call per step value."""

    _fn: CompiledStep
    _state_keys: tuple = ()

    def _init_state(self, p: Tensor, group: dict, state: dict) -> None:
        state["step"] = _step_tensor()
        for k in self._state_keys:
            state[k] = _zeros(p)

    def _call(self, group, params, grads, states, step) -> None:  # pragma: no cover
        raise NotImplementedError

    def _step_groups(self) -> None:
        all_state = self.state
        for group in self.param_groups:
            runs: dict = {}  # step value -> (params, grads, states): one call each
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if getattr(g, "is_sparse", False):
                    raise RuntimeError(f"{type(self).__name__} does not support sparse "
                                       "gradients")
                state = all_state[p]
                if len(state) == 0:
                    self._init_state(p, group, state)
                st = state.get("step")
                if st is not None:
                    state["step"] = _incr(st)
                sv = _step_value(state)
                run = runs.get(sv)
                if run is None:
                    run = runs[sv] = ([], [], [])
                run[0].append(p)
                run[1].append(g)
                run[2].append(state)
            for step, (params, grads, states) in runs.items():
                self._call(group, _reals(params), _reals(grads), states, step)

    @staticmethod
    def _lists(states, *keys):
        return [_reals([s[k] for s in states]) for k in keys]


class SGD(_Base):
    _fn = CompiledStep(F.SGD)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check_common(lr)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _step_groups(self) -> None:
        state = self.state
        for group in self.param_groups:
            momentum = _f(group["momentum"])
            runs: dict = {}  # first step of the buffers? -> (params, grads, buffers)
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                buf = state[p].get("momentum_buffer") if momentum != 0.0 else g
                first = buf is None
                if first:
                    buf = state[p]["momentum_buffer"] = _zeros(p)
                run = runs.get(first)
                if run is None:
                    run = runs[first] = ([], [], [])
                run[0].append(p)
                run[1].append(g)
                run[2].append(buf)  # (the grads, unused by the math, without momentum)
            wd = _f(group["weight_decay"])
            flags = (False, momentum != 0.0, bool(group["nesterov"]), bool(group["maximize"]),
                     wd != 0.0)
            for first, (ps, gs, bufs) in runs.items():
                # new buffers are zeros: the steady-state update without dampening gives
                # PyTorch's first step `buf = grad` (0 * momentum + 1.0 * grad), so one
                # program serves both steps (one compile, not two)
                damp = 0.0 if first else _f(group["dampening"])
                self._fn.for_group(group)(flags, _reals(ps), _reals(gs), _reals(bufs),
                                          _f(group["lr"]), momentum, damp, wd)


class Adam(_Base):
    _fn = CompiledStep(F.ADAM)
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=None):
        if decoupled_weight_decay is None:
            decoupled_weight_decay = self._decoupled
        _check_common(lr, eps, weight_decay, betas)
        _check_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = _step_tensor()
        state["exp_avg"] = _zeros(p)
        state["exp_avg_sq"] = _zeros(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros(p)

    def _call(self, group, params, grads, states, step):
        exp_avgs, exp_avg_sqs = self._lists(states, "exp_avg", "exp_avg_sq")
        amsgrad = bool(group["amsgrad"])
        # without amsgrad the step never reads `maxs`: the gradients stand in (read-only), as in
        # SGD, since a list aliasing a written one (exp_avg_sqs) would make the keyed compiled
        # step (device tensors, strided ones) see overlapping arguments and run in place
        maxs = self._lists(states, "max_exp_avg_sq")[0] if amsgrad else grads
        beta1, beta2 = group["betas"]
        wd = _f(group["weight_decay"])
        flags = (amsgrad, bool(group["maximize"]), wd != 0.0,
                 bool(group["decoupled_weight_decay"]))
        self._fn.for_group(group)(flags, params, grads, exp_avgs, exp_avg_sqs, maxs, step,
                                  _f(beta1), _f(beta2), _f(group["lr"]), wd, _f(group["eps"]))


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class Adagrad(_Base):
    _fn = CompiledStep(F.ADAGRAD)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check_common(lr)
        _check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(0.0 <= initial_accumulator_value,
               f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state eagerly, in the constructor
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    def _init_state(self, p, group, state):
        state["step"] = _step_tensor()
        state["sum"] = C.full_like(p, group["initial_accumulator_value"])

    def _call(self, group, params, grads, states, step):
        (sums,) = self._lists(states, "sum")
        wd = _f(group["weight_decay"])
        self._fn.for_group(group)((bool(group["maximize"]), wd != 0.0), params, grads, sums,
                                  step, _f(group["lr"]), wd, _f(group["lr_decay"]),
                                  _f(group["eps"]))


class RMSprop(_Base):
    _fn = CompiledStep(F.RMSPROP)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_common(lr)
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = _step_tensor()
        state["square_avg"] = _zeros(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros(p)
        if group["centered"]:
            state["grad_avg"] = _zeros(p)

    def _call(self, group, params, grads, states, step):
        (sq,) = self._lists(states, "square_avg")
        centered, momentum = bool(group["centered"]), _f(group["momentum"])
        gavg = self._lists(states, "grad_avg")[0] if centered else sq
        bufs = self._lists(states, "momentum_buffer")[0] if momentum > 0 else sq
        wd = _f(group["weight_decay"])
        flags = (centered, momentum > 0.0, bool(group["maximize"]), wd != 0.0)
        self._fn.for_group(group)(flags, params, grads, sq, gavg, bufs, _f(group["lr"]),
                                  _f(group["alpha"]), _f(group["eps"]), wd, momentum)


class Adadelta(_Base):
    _fn = CompiledStep(F.ADADELTA)
    _state_keys = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_common(lr)
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _call(self, group, params, grads, states, step):
        sq, acc = self._lists(states, "square_avg", "acc_delta")
        wd = _f(group["weight_decay"])
        self._fn.for_group(group)((bool(group["maximize"]), wd != 0.0), params, grads, sq, acc,
                                  _f(group["lr"]), _f(group["rho"]), _f(group["eps"]), wd)


class Adamax(_Base):
    _fn = CompiledStep(F.ADAMAX)
    _state_keys = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_common(lr, eps, weight_decay, betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _call(self, group, params, grads, states, step):
        avg, inf = self._lists(states, "exp_avg", "exp_inf")
        beta1, beta2 = group["betas"]
        wd = _f(group["weight_decay"])
        self._fn.for_group(group)((bool(group["maximize"]), wd != 0.0), params, grads, avg, inf,
                                  step, _f(group["eps"]), _f(beta1), _f(beta2),
                                  _f(group["lr"]), wd)


class NAdam(_Base):
    _fn = CompiledStep(F.NADAM)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_common(lr, eps, weight_decay, betas)
        _check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = _step_tensor()
        state["mu_product"] = C.tensor(1.0)
        state["exp_avg"] = _zeros(p)
        state["exp_avg_sq"] = _zeros(p)

    def _call(self, group, params, grads, states, step):
        beta1, beta2 = _f(group["betas"][0]), _f(group["betas"][1])
        md = _f(group["momentum_decay"])
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        # mu_product is PyTorch's float32 state tensor: multiply it as a tensor (same rounding)
        for s in states:
            s["mu_product"] *= mu
        avg, sq = self._lists(states, "exp_avg", "exp_avg_sq")
        for mp, idx in _runs(range(len(states)), lambda i: _f(states[i]["mu_product"])):
            sub = lambda xs: [xs[i] for i in idx]  # noqa: E731
            wd = _f(group["weight_decay"])
            flags = (bool(group["maximize"]), wd != 0.0, bool(group["decoupled_weight_decay"]))
            self._fn.for_group(group)(flags, sub(params), sub(grads), sub(avg), sub(sq), step,
                                      mp, mu, mu_next, beta1, beta2, _f(group["lr"]), wd,
                                      _f(group["eps"]))


class RAdam(_Base):
    _fn = CompiledStep(F.RADAM)
    _state_keys = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_common(lr, eps, weight_decay, betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _call(self, group, params, grads, states, step):
        avg, sq = self._lists(states, "exp_avg", "exp_avg_sq")
        beta1, beta2 = group["betas"]
        wd = _f(group["weight_decay"])
        flags = (bool(group["maximize"]), wd != 0.0, bool(group["decoupled_weight_decay"]))
        self._fn.for_group(group)(flags, params, grads, avg, sq, step, _f(beta1), _f(beta2),
                                  _f(group["lr"]), wd, _f(group["eps"]))

"""`gradcheck` / `gradgradcheck`: compare autograd's Jacobians with central finite differences.

Inputs that require grad should be float64 (as in PyTorch); each is perturbed element by element.
"""
from __future__ import annotations

import numpy as np

from .._device.transfer import host, place
from .._tensor import Tensor
from .engine import grad as autograd_grad


class GradcheckError(RuntimeError):
    pass


def _outputs(fn, inputs):
    out = fn(*inputs)
    return (out,) if isinstance(out, Tensor) else tuple(o for o in out if isinstance(o, Tensor))


def _numerical(fn, inputs, eps):
    """Per differentiable input: array [n_in, total_out] of d out / d in.

    Runs with grad mode on: the function may itself call autograd (gradgradcheck)."""
    base = _outputs(fn, inputs)
    n_out = sum(o.numel() for o in base)
    jacs = []
    for t in inputs:
        if not (isinstance(t, Tensor) and t._requires_grad):
            continue
        flat = t._data.reshape(-1)  # a view: t must be contiguous
        if flat.size and not np.shares_memory(flat, t._data):
            raise ValueError("gradcheck needs contiguous inputs")
        J = np.zeros((flat.size, n_out), dtype=np.float64)
        for i in range(flat.size):
            orig = flat[i].copy()
            flat[i] = orig + eps
            plus = np.concatenate([host(o).astype(np.float64).ravel()
                                   for o in _outputs(fn, inputs)])
            flat[i] = orig - eps
            minus = np.concatenate([host(o).astype(np.float64).ravel()
                                    for o in _outputs(fn, inputs)])
            flat[i] = orig
            J[i] = (plus - minus) / (2 * eps)
        jacs.append(J)
    return jacs


def _analytical(fn, inputs):
    diff = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    outs = _outputs(fn, inputs)
    jacs = [np.zeros((t.numel(), sum(o.numel() for o in outs))) for t in diff]
    col = 0
    for o in outs:
        for j in range(o.numel()):
            if o._requires_grad:
                go = np.zeros(o._data.size, o._dtype.np)
                go[j] = 1
                seed = place(Tensor._make(go.reshape(o._data.shape)), o._device)
                gs = autograd_grad((o,), diff, (seed,),
                                   retain_graph=True, allow_unused=True)
                for k, g in enumerate(gs):
                    if g is not None:
                        jacs[k][:, col] = host(g).astype(np.float64).ravel()
            col += 1
    return jacs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_forward_ad=False, **kwargs) -> bool:
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    num = _numerical(func, inputs, eps)
    ana = _analytical(func, inputs)
    for k, (n, a) in enumerate(zip(num, ana)):
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                raise GradcheckError(
                    f"Jacobian mismatch for output 0 with respect to input {k},\n"
                    f"numerical:{n}\nanalytical:{a}\n")
            return False
    if check_forward_ad:
        from . import forward_ad as fwAD
        diff = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
        for k, t in enumerate(diff):
            for i in range(t.numel()):
                v = np.zeros(t._data.size, t._dtype.np)
                v[i] = 1
                with fwAD.dual_level():
                    dual = [fwAD.make_dual(x, place(Tensor._make(v.reshape(x._data.shape)),
                                                    x._device))
                            if x is t else x for x in inputs]
                    outs = _outputs(func, dual)
                    tang = np.concatenate([
                        (host(fwAD.unpack_dual(o).tangent).ravel() if o._tangent is not None
                         else np.zeros(o.numel())) for o in outs]).astype(np.float64)
                if not np.allclose(tang, num[k][i], rtol=rtol, atol=atol):
                    if raise_exception:
                        raise GradcheckError(f"Forward-mode Jacobian mismatch w.r.t. input {k}, "
                                             f"element {i}: {tang} vs {num[k][i]}")
                    return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **kwargs) -> bool:
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(place(Tensor._make(rng.standard_normal(o._data.shape)
                                                .astype(o._dtype.np)), o._device)
                             .requires_grad_() for o in outs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]

    def first_grad(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _outputs(func, ins)
        gs = autograd_grad(outs, [ins[i] for i in diff_idx], gos, create_graph=True,
                           allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

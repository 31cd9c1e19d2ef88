"""`jitorch.autograd.Function`: user-defined ops with a hand-written backward.

Owns the ctx object (`save_for_backward`, `saved_tensors` with version checks,
`needs_input_grad`, `mark_non_differentiable`, `mark_dirty`, `set_materialize_grads`) and the
node that calls the user's `backward`. Both PyTorch styles work: `forward(ctx, *args)`, and
`forward(*args)` plus `setup_context(ctx, inputs, output)`.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from . import grad_mode
from .graph import Node, edge_of


class FunctionCtx:
    def __init__(self):
        self._saved = ()
        self._versions = ()
        self._freed = False
        self.needs_input_grad = ()
        self._non_diff = set()
        self._dirty = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._versions = tuple(t._version[0] if isinstance(t, Tensor) else None
                               for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            from .graph import _FREED_MSG
            raise RuntimeError(_FREED_MSG)
        for t, v in zip(self._saved, self._versions):
            if isinstance(t, Tensor) and t._version[0] != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} [{', '.join(map(str, t.shape))}]], is "
                    f"at version {t._version[0]}; expected version {v} instead.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        self._non_diff.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = value


class _FunctionNode(Node):
    __slots__ = ("fn_cls", "ctx", "arg_is_tensor")

    def name(self):
        return f"{self.fn_cls.__name__}Backward"

    def release(self):
        self.ctx._freed = bool(self.ctx._saved)
        self.ctx._saved = ()

    def run(self, grads):
        ctx = self.ctx
        if ctx.materialize_grads:
            grads = [g if g is not None else Tensor._make(np.zeros(s, d.np), d)
                     for g, (s, d) in zip(grads, self.out_meta)]
        res = self.fn_cls.backward(ctx, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n_args = len(self.arg_is_tensor)
        if len(res) < n_args:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n_args}, got {len(res)})")
        out = []
        k = 0
        for is_t, g in zip(self.arg_is_tensor, res):
            if not is_t:
                continue
            shape, d = self.in_meta[k]
            if g is not None and tuple(g.shape) != shape:
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                   f"index {k} - got {list(g.shape)} but expected shape "
                                   f"compatible with {list(shape)}")
            out.append(g if self.next_edges[k] is not None else None)
            k += 1
        return out


class Function:
    """Subclass with static `forward` and `backward`; call with `.apply(*args)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tensors = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        setup = getattr(cls, "setup_context", None)
        uses_setup = setup is not None and setup is not Function.setup_context
        with grad_mode.no_grad():
            out = cls.forward(*args, **kwargs) if uses_setup else cls.forward(ctx, *args,
                                                                              **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, out)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        # an input returned as-is becomes a new tensor object, so its history can differ
        outs = tuple(o.view_as(o) if isinstance(o, Tensor) and any(o is a for a in args)
                     and id(o) not in {id(d) for d in ctx._dirty} else o for o in outs)
        if grad_mode._state.enabled and any(t._requires_grad for t in tensors):
            node = _FunctionNode()
            node.fn_cls, node.ctx = cls, ctx
            node.arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
            node.next_edges = tuple(edge_of(t) if t._requires_grad else None for t in tensors)
            node.in_meta = tuple((t._data.shape, t._dtype) for t in tensors)
            tensor_outs = [o for o in outs if isinstance(o, Tensor)]
            node.out_meta = tuple((o._data.shape, o._dtype) for o in tensor_outs)
            node.custom = node.run
            for k, o in enumerate(tensor_outs):
                if id(o) in ctx._non_diff or o._dtype.category < dt.FLOAT:
                    continue
                o._requires_grad = True
                o._grad_fn = node
                o._output_nr = k
        return outs[0] if single else outs

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError


def once_differentiable(fn):
    return fn

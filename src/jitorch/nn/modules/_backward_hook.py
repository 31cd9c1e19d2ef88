"""Module full backward hooks (`register_full_backward_hook` / `_pre_hook`), PyTorch's way.

The tensors going into and out of `forward` pass through an identity autograd Function; a
pre-hook on the output identity's node sees the gradients w.r.t. the module's outputs (and may
replace them: backward pre-hooks), and a hook on the input identity's node sees the gradients
w.r.t. the module's inputs, where the user's `hook(module, grad_input, grad_output)` runs (and
may replace grad_input). Mirrors `torch.utils.hooks.BackwardHook`.
"""
from __future__ import annotations

import warnings

from ..._creation import zeros
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.function import Function


class _BackwardHookFunction(Function):
    @staticmethod
    def forward(ctx, *args):
        # own views (not the inputs themselves) so mark_non_differentiable can name them
        outs = tuple(a.view_as(a) for a in args)
        ctx.mark_non_differentiable(*[o for o, a in zip(outs, args) if not a.requires_grad])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(indices, values, size):
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


def _unpack_none(indices, values):
    return tuple(values[idx] for idx in indices)


class BackwardHook:
    """One forward call's hook state (grad_outputs travel from the output hook to the input's)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None
        self.input_meta = []

    def _apply_on_tensors(self, fn, args):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (any(args[i].requires_grad for i in idx) and grad_mode.is_grad_enabled()):
            return args, None
        new = _BackwardHookFunction.apply(*[args[i] for i in idx])
        fn(next(t.grad_fn for t in new if t.grad_fn is not None))
        arg_list = list(args)
        for i, val in zip(idx, new):
            arg_list[i] = val
        return tuple(arg_list), idx

    def setup_input_hook(self, args):
        def fn(grad_fn):
            def hook(grad_input, _):
                if self.grad_outputs is None:
                    return None  # the gradient reached the input without passing the outputs
                # a tensor input that does not require grad gets zeros, as PyTorch's
                # materialized gradient of its non-differentiable identity output
                grad_input = tuple(
                    zeros(meta[0], dtype=meta[1]) if g is None and meta is not None else g
                    for g, meta in zip(grad_input, self.input_meta))
                res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
                for user_hook in self.user_hooks:
                    out = user_hook(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if len(out) != len(res):
                        raise RuntimeError("Backward hook returned an invalid number of "
                                           f"grad_input, got {len(out)}, but expected "
                                           f"{len(res)}")
                    res = out
                self.grad_outputs = None
                return _unpack_none(self.input_tensors_index, res)
            grad_fn.register_hook(hook)

        res, idx = self._apply_on_tensors(fn, args)
        self.input_meta = [None if idx is None or args[i].requires_grad
                           else (tuple(args[i].shape), args[i].dtype) for i in idx or ()]
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result):
        def fn(grad_fn):
            def hook(grad_output):
                self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output,
                                                    self.n_outputs)
                for pre_hook in self.user_pre_hooks:
                    new = pre_hook(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != len(self.grad_outputs):
                        raise RuntimeError("Backward pre hook returned an invalid number of "
                                           f"grad_output, got {len(new)}, but expected "
                                           f"{len(self.grad_outputs)}")
                    self.grad_outputs = new
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks run here, with all-None grad_input
                    if self.user_hooks:
                        warnings.warn(
                            "Full backward hook is firing when gradients are computed with "
                            "respect to module outputs since no inputs require gradients. See "
                            "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                            "#torch.nn.Module.register_full_backward_hook for more details.",
                            stacklevel=5)
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple)
                                                    and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input "
                                               "requires gradient should always return None "
                                               "or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None
            grad_fn.register_prehook(hook)

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]

"""`instance_norm`: per-sample, per-channel normalisation, as PyTorch computes it.

PyTorch's `torch.instance_norm` views (N, C, *) as (1, N*C, *) and runs batch norm on it (the
running statistics and the affine parameters repeated N times), then folds the updated running
statistics back as their mean over the batch. This does the same with `batch_norm`, so the
values, the gradients and the running-stat update are batch norm's.
"""
from __future__ import annotations

from ..autograd import grad_mode

__all__ = ["instance_norm"]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5, cudnn_enabled=False):
    from .nn_norm import batch_norm
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {input.ndim}D input)")
    n, c, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    if use_input_stats:
        count = 1
        for s in spatial:
            count *= s
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")

    def rep(t):
        return None if t is None else t.repeat(n)

    rm, rv = rep(running_mean), rep(running_var)
    y = batch_norm(input.reshape(1, n * c, *spatial), rm, rv, rep(weight), rep(bias),
                   use_input_stats, momentum, eps)
    if use_input_stats:
        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(n, c).mean(0))
    return y.reshape(input.shape)

"""`glu`, `prelu` and `channel_shuffle`: composites of registry ops with PyTorch's checks
(`prelu`'s learnable slope broadcasts along the channel dim 1; `channel_shuffle` is a
reshape / transpose / reshape)."""
from __future__ import annotations
from .. import _autocast

__all__ = ["prelu", "channel_shuffle"]  # also torch.prelu / torch.channel_shuffle


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of `input` along `dim`."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


@_autocast.policy("lower")
def prelu(input, weight):
    """x where x > 0, weight * x elsewhere; weight has 1 or C (= input.size(1)) elements."""
    from .ternary import where
    if input.ndim == 0:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.ndim >= 2 else 1
    k = weight.numel()
    if k != 1 and k != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {k} and channel size = {channels}.")
    if k == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, w * input)


def channel_shuffle(input, groups):
    """(N, C, *) -> channels regrouped: (N, g, C / g, *) transposed to (N, C / g, g, *)."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, rest = input.shape[0], input.shape[1], tuple(input.shape[2:])
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return (input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
            .reshape(n, c, *rest))

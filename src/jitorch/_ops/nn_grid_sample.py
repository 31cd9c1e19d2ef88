"""`affine_grid` and `grid_sample` for 4-D input (spatial transformers), composites of registry
ops with PyTorch's coordinate conventions.

`affine_grid` is the base grid (pixel centres in [-1, 1], or the corners with
`align_corners=True`) times theta^T. `grid_sample` unnormalises the grid to pixel coordinates,
clips them for `padding_mode="border"`, and gathers the 4 neighbours (`bilinear`) or the nearest
pixel (`nearest`, round half to even as PyTorch's `nearbyint`) from the flattened planes;
out-of-range neighbours read 0 (`"zeros"`). The weights are differentiable in the grid and the
gather in the input, so both get PyTorch's gradients. `bicubic` and `"reflection"` padding
raise NotImplementedError naming them.
"""
from __future__ import annotations

import warnings
from .. import _autocast

__all__: list = []  # reached through jitorch.nn.functional

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def _align(align_corners):
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def _base(n, align_corners, dtype):
    from .._creation import arange, linspace
    if align_corners:
        return linspace(-1.0, 1.0, n, dtype=dtype) if n > 1 else arange(1, dtype=dtype) * 0
    return (arange(n, dtype=dtype) * 2 + 1) / n - 1


def affine_grid(theta, size, align_corners=None):
    """(N, 2, 3) affine matrices -> (N, H, W, 2) sampling grid for an output of `size`."""
    from .._creation import ones
    from .join import stack
    align_corners = _align(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) != 4:
        raise NotImplementedError("jitorch: affine_grid supports 4-D sizes (N, C, H, W) only; "
                                  "5-D (volumetric) grids are not implemented")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{size}. Got {list(theta.shape)}.")
    n, _, h, w = size
    if theta.shape[0] != n:
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{size}. Got {list(theta.shape)}.")
    xs = _base(w, align_corners, theta.dtype).reshape(1, w).expand(h, w)
    ys = _base(h, align_corners, theta.dtype).reshape(h, 1).expand(h, w)
    base = stack([xs, ys, ones(h, w, dtype=theta.dtype)], -1).reshape(1, h * w, 3)
    return base.matmul(theta.transpose(1, 2)).reshape(n, h, w, 2)


def _unnormalise(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


@_autocast.policy({"cpu": "fp32", "cuda": "promote"})
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, H, W) at `grid` (N, Ho, Wo, 2) locations (x, y in [-1, 1])."""
    align_corners = _align(align_corners)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" or padding_mode == "reflection":
        raise NotImplementedError(f"jitorch: grid_sample(mode='{mode}', padding_mode="
                                  f"'{padding_mode}') is not implemented (bilinear / nearest "
                                  f"with zeros / border padding are)")
    if input.ndim != 4:
        raise NotImplementedError("jitorch: grid_sample supports 4-D input (N, C, H, W) only")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension and "
                           f"the same batch size as input, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _unnormalise(grid[..., 0], w, align_corners)
    iy = _unnormalise(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        ix, iy = ix.clamp(0, w - 1), iy.clamp(0, h - 1)
    flat = input.reshape(n, c, h * w)

    def tap(xi, yi):
        """Values at integer pixel coordinates (float tensors), 0 outside the image."""
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).long().reshape(n, 1, ho * wo)
        vals = flat.gather(2, idx.expand(n, c, ho * wo)).reshape(n, c, ho, wo)
        return vals * inside.to(input.dtype).unsqueeze(1)

    if mode == "nearest":
        return tap(ix.detach().round(), iy.detach().round())
    x0, y0 = ix.detach().floor(), iy.detach().floor()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (tap(x0, y0) * (wx0 * wy0) + tap(x1, y0) * (wx1 * wy0)
            + tap(x0, y1) * (wx0 * wy1) + tap(x1, y1) * (wx1 * wy1))

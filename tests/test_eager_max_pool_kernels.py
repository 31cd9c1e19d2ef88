"""Eager 1-D / 2-D float max pooling runs the compiled kernels of script/targets/cpu/pool.py
(_ops/nn_pool.py `_planes`): values, indices and gradients against a per-window loop reference
(first maximum in window order, a NaN wins, padding never chosen: PyTorch's rule), ties and
overlapping windows included; an all -inf window next to padding and an empty batch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import jitorch as jt

F = jt.nn.functional


def _out(n, k, s, p, d, ceil):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _reference(x, g, k, s, p, d, ceil):
    """(values, flat per-plane indices, input gradient) of a 2-D max pool, window by window;
    the gradient summed in float64 in output order."""
    lead, (h, w) = x.shape[:-2], x.shape[-2:]
    planes = x.reshape(-1, h, w)
    oh, ow = _out(h, k[0], s[0], p[0], d[0], ceil), _out(w, k[1], s[1], p[1], d[1], ceil)
    vals = np.empty((len(planes), oh, ow), x.dtype)
    idx = np.empty((len(planes), oh, ow), np.int64)
    grad = np.zeros((len(planes), h * w), np.float64)
    gp = g.reshape(-1, oh, ow)
    for c, i, j in itertools.product(range(len(planes)), range(oh), range(ow)):
        best, bi = None, -1
        for a, b in itertools.product(range(k[0]), range(k[1])):
            hh, ww = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
            if 0 <= hh < h and 0 <= ww < w:
                v = planes[c, hh, ww]
                if bi < 0 or (not np.isnan(best) and (v > best or np.isnan(v))):
                    best, bi = v, hh * w + ww
        vals[c, i, j], idx[c, i, j] = best, bi
        grad[c, bi] += gp[c, i, j]
    return (vals.reshape(lead + (oh, ow)), idx.reshape(lead + (oh, ow)),
            grad.astype(x.dtype).reshape(x.shape))


CASES = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 9), (2, 2), (2, 2), (0, 0), (1, 1), False),  # the kernels' 2x2 fast path
    ((3, 7, 7), (3, 3), (1, 1), (1, 1), (1, 1), False),  # overlapping windows, padding
    ((2, 2, 10, 9), (3, 2), (2, 3), (1, 0), (2, 1), True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_max_pool2d_matches_window_reference_with_ties_nan_and_infs(case, dtype):
    shape, k, s, p, d, ceil = case
    rng = np.random.default_rng(len(shape) + k[0])
    a = np.round(rng.standard_normal(shape) * 1.5).astype(dtype)  # many ties
    a.reshape(-1)[rng.integers(0, a.size, 3)] = np.nan
    a.reshape(-1)[rng.integers(0, a.size, 6)] = np.inf  # (an inf beside a -inf sums to NaN)
    a.reshape(-1)[rng.integers(0, a.size, 6)] = -np.inf
    kw = dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil)
    x = jt.tensor(a, requires_grad=True)
    y = F.max_pool2d(x, **kw)
    g = rng.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(jt.tensor(g))
    yi, idx = F.max_pool2d(jt.tensor(a), return_indices=True, **kw)
    rv, ri, rg = _reference(a, g, k, s, p, d, ceil)
    np.testing.assert_array_equal(y.detach().numpy(), rv)
    np.testing.assert_array_equal(yi.numpy(), rv)
    np.testing.assert_array_equal(idx.numpy(), ri)
    np.testing.assert_array_equal(x.grad.numpy(), rg)
    assert x.grad.dtype == y.dtype == jt.tensor(a).dtype


def test_max_pool1d_matches_window_reference():
    rng = np.random.default_rng(3)
    a = np.round(rng.standard_normal((2, 3, 11))).astype(np.float32)
    x = jt.tensor(a, requires_grad=True)
    y = F.max_pool1d(x, 3, 2, 1, ceil_mode=True)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(jt.tensor(g))
    rv, ri, rg = _reference(a[..., None, :], g[..., None, :], (1, 3), (1, 2), (0, 1), (1, 1),
                            True)
    np.testing.assert_array_equal(y.detach().numpy(), rv[..., 0, :])
    np.testing.assert_array_equal(F.max_pool1d(jt.tensor(a), 3, 2, 1, ceil_mode=True,
                                               return_indices=True)[1].numpy(), ri[..., 0, :])
    np.testing.assert_array_equal(x.grad.numpy(), rg[..., 0, :])


def test_all_minus_inf_window_beside_padding_picks_an_input_element():
    # PyTorch: the first element inside the input (index 0), never the padding (was -1)
    x = jt.tensor([[-np.inf, -np.inf, -np.inf, 3.0]])
    y, idx = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    assert idx.tolist() == [[0, 3]] and y.tolist() == [[-np.inf, 3.0]]


@pytest.mark.parametrize("pool, shape", [(F.max_pool2d, (0, 2, 4, 4)), (F.max_pool1d, (0, 2, 4))])
def test_empty_batch_backward(pool, shape):
    x = jt.zeros(*shape, requires_grad=True)
    y = pool(x, 2)
    y.sum().backward()  # (the bincount path raised ValueError on an empty batch)
    assert tuple(y.shape) == shape[:2] + (2,) * (len(shape) - 2)
    assert tuple(x.grad.shape) == shape and not x.grad.numpy().any()

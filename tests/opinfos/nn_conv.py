"""OpInfo entries for convolution and pooling (src/jitorch/_ops/nn_conv.py, nn_pool.py).

References are direct loops over output (or input) positions in NumPy, written from the
defining formulas, independent of the implementations' strided-view/matmul kernels. Shapes are
small: gradients are checked by finite differences.
"""
import itertools
import math

import numpy as np

# the functional names live in jitorch.nn._functional_conv until functional.py re-exports them
import jitorch.nn._functional_conv as F
from opinfo import OpInfo, Sample


def _tup(v, nd):
    return tuple(v) * (nd if len(tuple(v)) == 1 else 1) if isinstance(v, (tuple, list)) \
        else (v,) * nd


def _batched(x, nd):
    return (x, False) if x.ndim == nd + 2 else (x[None], True)


# --- convolution references ----------------------------------------------------------------------
def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nd = w.ndim - 2
    x, unb = _batched(x, nd)
    k = w.shape[2:]
    s, d = _tup(stride, nd), _tup(dilation, nd)
    if padding == "valid":
        lo = hi = (0,) * nd
    elif padding == "same":
        tot = [d[i] * (k[i] - 1) for i in range(nd)]
        lo, hi = [t // 2 for t in tot], [t - t // 2 for t in tot]
    else:
        lo = hi = _tup(padding, nd)
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(zip(lo, hi)))
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    n, o, cg = x.shape[0], w.shape[0], w.shape[1]
    og = o // groups
    y = np.zeros((n, o) + tuple(out))
    for pos in itertools.product(*[range(v) for v in out]):
        sl = tuple(slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i])
                   for i in range(nd))
        for g in range(groups):
            win = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            wg = w[g * og:(g + 1) * og]
            y[(slice(None), slice(g * og, (g + 1) * og)) + pos] = np.tensordot(
                win, wg, axes=(list(range(1, nd + 2)), list(range(1, nd + 2))))
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    y = y.astype(x.dtype)
    return y[0] if unb else y


def _conv_t_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = w.ndim - 2
    x, unb = _batched(x, nd)
    k = w.shape[2:]
    s, p, op, d = (_tup(v, nd) for v in (stride, padding, output_padding, dilation))
    spatial = x.shape[2:]
    full = [(spatial[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nd)]
    cin, og = w.shape[0], w.shape[1]
    cg = cin // groups
    buf = np.zeros((x.shape[0], og * groups) + tuple(full))
    for pos in itertools.product(*[range(v) for v in spatial]):
        for kk in itertools.product(*[range(v) for v in k]):
            at = tuple(pos[i] * s[i] + kk[i] * d[i] for i in range(nd))
            for g in range(groups):
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]  # (N, cg)
                wv = w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk]  # (cg, og)
                buf[(slice(None), slice(g * og, (g + 1) * og)) + at] += xv @ wv
    y = buf[(slice(None), slice(None)) + tuple(slice(p[i], full[i] - p[i]) for i in range(nd))]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    y = y.astype(x.dtype)
    return y[0] if unb else y


def _r(dtype, rng, *shape):
    return rng.standard_normal(shape).astype(dtype)


def _conv2d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample((r(2, 4, 5, 6), r(3, 4, 3, 2), r(3)), name="plain"),
        Sample((r(4, 5, 5), r(3, 4, 2, 2)), {"stride": 2, "padding": 1}, name="unbatched"),
        Sample((r(1, 4, 6, 5), r(6, 2, 3, 3), r(6)),
               {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
               name="groups-dilation"),
        Sample((r(2, 2, 5, 4), r(2, 2, 2, 3)), {"padding": "same", "dilation": 2}, name="same"),
        Sample((r(2, 2, 5, 4), r(2, 2, 3, 3)), {"padding": "valid"}, name="valid"),
        Sample((r(0, 2, 5, 4), r(2, 2, 3, 3)), name="empty-batch"),
    ]


def _conv2d_grad(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(1, 2, 4, 3), r(2, 1, 2, 2), r(2)), {"stride": (2, 1), "padding": 1,
                                                           "groups": 2}),
            Sample((r(2, 3, 3), r(2, 2, 2, 2)), {"padding": "same", "dilation": (2, 1)},
                   name="unbatched-same")]


def _conv1d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample((r(2, 4, 7), r(3, 4, 3), r(3)), name="plain"),
        Sample((r(4, 7), r(4, 2, 2)), {"stride": 2, "padding": 1, "groups": 2},
               name="unbatched-groups"),
        Sample((r(2, 2, 8), r(2, 2, 2)), {"padding": "same", "dilation": 3}, name="same"),
    ]


def _conv1d_grad(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 2, 5), r(2, 1, 3), r(2)), {"stride": 2, "padding": 1, "groups": 2,
                                                     "dilation": 2})]


def _convt2d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample((r(2, 4, 3, 4), r(4, 3, 3, 2), r(3)), name="plain"),
        Sample((r(4, 3, 3), r(4, 2, 2, 3)), {"stride": 2, "padding": 1, "output_padding": 1},
               name="unbatched-stride"),
        Sample((r(1, 4, 3, 2), r(4, 1, 3, 3), r(2)),
               {"stride": (3, 2), "padding": (1, 0), "output_padding": (2, 1), "groups": 2,
                "dilation": (2, 1)}, name="groups-dilation"),
    ]


def _convt2d_grad(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(1, 2, 2, 3), r(2, 1, 2, 2), r(2)),
                   {"stride": 2, "padding": (1, 0), "output_padding": 1, "groups": 2})]


def _convt1d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample((r(2, 4, 5), r(4, 3, 3), r(3)), name="plain"),
        Sample((r(4, 5), r(4, 1, 2)), {"stride": 3, "padding": 1, "output_padding": 2,
                                       "groups": 2, "dilation": 2}, name="unbatched"),
    ]


def _convt1d_grad(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 2, 3), r(2, 2, 2), r(2)), {"stride": 2, "output_padding": 1})]


# --- pooling references --------------------------------------------------------------------------
def _pool_geometry(spatial, k, s, p, d, ceil_mode):
    out = []
    for i, size in enumerate(spatial):
        num = size + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (-(-num // s[i]) if ceil_mode else num // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= size + p[i]:
            o -= 1
        out.append(o)
    return out


def _max_pool_ref(nd):
    def ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
            return_indices=False):
        k = _tup(kernel_size, nd)
        s = k if stride is None else _tup(stride, nd)
        p, d = _tup(padding, nd), _tup(dilation, nd)
        spatial = x.shape[-nd:]
        out = _pool_geometry(spatial, k, s, p, d, ceil_mode)
        lead = x.shape[:-nd]
        vals = np.zeros(lead + tuple(out), x.dtype)
        idx = np.zeros(lead + tuple(out), np.int64)
        for pos in itertools.product(*[range(v) for v in out]):
            best = np.full(lead, -np.inf)
            arg = np.zeros(lead, np.int64)
            for kk in itertools.product(*[range(v) for v in k]):
                at = [pos[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd)]
                if any(a < 0 or a >= spatial[i] for i, a in enumerate(at)):
                    continue
                v = x[(Ellipsis,) + tuple(at)]
                better = v > best
                best = np.where(better, v, best)
                arg = np.where(better, np.ravel_multi_index(at, spatial), arg)
            vals[(Ellipsis,) + pos] = best
            idx[(Ellipsis,) + pos] = arg
        return (vals, idx) if return_indices else vals
    return ref


def _avg_pool_ref(nd):
    def ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
            divisor_override=None):
        k = _tup(kernel_size, nd)
        s = k if stride is None else _tup(stride, nd)
        p = _tup(padding, nd)
        spatial = x.shape[-nd:]
        out = _pool_geometry(spatial, k, s, p, (1,) * nd, ceil_mode)
        y = np.zeros(x.shape[:-nd] + tuple(out))
        for pos in itertools.product(*[range(v) for v in out]):
            start = [pos[i] * s[i] - p[i] for i in range(nd)]
            end = [min(start[i] + k[i], spatial[i] + p[i]) for i in range(nd)]
            n_pad = math.prod(end[i] - start[i] for i in range(nd))
            lo = [max(v, 0) for v in start]
            hi = [min(end[i], spatial[i]) for i in range(nd)]
            sl = tuple(slice(lo[i], hi[i]) for i in range(nd))
            total = x[(Ellipsis,) + sl].sum(axis=tuple(range(-nd, 0)))
            div = divisor_override or (n_pad if count_include_pad else
                                       math.prod(hi[i] - lo[i] for i in range(nd)))
            y[(Ellipsis,) + pos] = total / div
        return y.astype(x.dtype)
    return ref


def _adaptive_ref(nd, kind):
    def ref(x, output_size, return_indices=False):
        spatial = x.shape[-nd:]
        o = _tup(output_size, nd)
        o = tuple(spatial[i] if v is None else v for i, v in enumerate(o))
        lead = x.shape[:-nd]
        y = np.zeros(lead + o, x.dtype)
        idx = np.zeros(lead + o, np.int64)
        for pos in itertools.product(*[range(v) for v in o]):
            st = [pos[i] * spatial[i] // o[i] for i in range(nd)]
            en = [-(-(pos[i] + 1) * spatial[i] // o[i]) for i in range(nd)]
            win = x[(Ellipsis,) + tuple(slice(st[i], en[i]) for i in range(nd))]
            flat = win.reshape(lead + (-1,))
            if kind == "avg":
                y[(Ellipsis,) + pos] = flat.mean(-1)
                continue
            a = flat.argmax(-1)
            y[(Ellipsis,) + pos] = flat.max(-1)
            loc = np.unravel_index(a, win.shape[-nd:])
            idx[(Ellipsis,) + pos] = np.ravel_multi_index(
                tuple(loc[i] + st[i] for i in range(nd)), spatial)
        if kind == "max" and return_indices:
            return y, idx
        return y
    return ref


def _pool_samples(nd, with_dilation=True):
    def gen(dtype, rng):
        r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
        sp = (7, 6)[:nd] if nd == 2 else (9,)
        out = [Sample((r(2, 3, *sp), 3), name="plain"),
               Sample((r(3, *sp), 2), {"stride": 1, "padding": 1}, name="unbatched"),
               Sample((r(1, 2, *sp), 3), {"stride": 2, "padding": 1, "ceil_mode": True},
                      name="ceil")]
        if with_dilation:
            out.append(Sample((r(2, 2, *sp), 2), {"stride": 2, "dilation": 2, "ceil_mode": True,
                                                  "padding": 1}, name="dilation"))
        return out
    return gen


def _avg_samples(nd):
    def gen(dtype, rng):
        out = _pool_samples(nd, with_dilation=False)(dtype, rng)
        x = _r(dtype, rng, *((2, 2, 5, 6)[:2 + nd]))
        out.append(Sample((x, 3), {"stride": 2, "padding": 1, "ceil_mode": True,
                                   "count_include_pad": False}, name="exclude-pad"))
        if nd == 2:
            out.append(Sample((x, (3, 2)), {"padding": (1, 0), "divisor_override": 4},
                              name="divisor"))
        return out
    return gen


def _pool_grad(nd, kw):
    def gen(dtype, rng):
        sp = (4, 5) if nd == 2 else (6,)
        return [Sample((rng.standard_normal((2, *sp)), 3), dict(kw))]
    return gen


def _adaptive_samples(nd, kw=None):
    kw = kw or {}

    def gen(dtype, rng):
        r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
        sp = (7, 5) if nd == 2 else (7,)
        out = [Sample((r(2, 3, *sp), 3), dict(kw), name="shrink"),
               Sample((r(3, *sp), 9), dict(kw), name="grow-unbatched")]
        if nd == 2:
            out.append(Sample((r(1, 2, *sp), (None, 2)), dict(kw), name="none"))
        return out
    return gen


def _adaptive_grad(nd, kw=None):
    def gen(dtype, rng):
        return [Sample((rng.standard_normal((2, 5, 4)[:nd + 1]), 3), dict(kw or {}))]
    return gen


# --- unfold / fold -------------------------------------------------------------------------------
def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    x, unb = _batched(x, 2)
    k, d, p, s = (_tup(v, 2) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    cols = []
    for i, j in itertools.product(range(out[0]), range(out[1])):
        win = xp[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
                 j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
        cols.append(win.reshape(x.shape[0], -1))
    y = np.stack(cols, -1)
    return y[0] if unb else y


def _fold_ref(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    unb = x.ndim == 2
    x = x[None] if unb else x
    size, k, d, p, s = (_tup(v, 2) for v in (output_size, kernel_size, dilation, padding,
                                            stride))
    out = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    c = x.shape[1] // (k[0] * k[1])
    buf = np.zeros((x.shape[0], c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for li, (i, j) in enumerate(itertools.product(range(out[0]), range(out[1]))):
        blk = x[:, :, li].reshape(x.shape[0], c, k[0], k[1])
        buf[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
            j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]] += blk
    y = buf[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]].astype(x.dtype)
    return y[0] if unb else y


def _unfold_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3, 5, 4), (2, 3)), name="plain"),
            Sample((r(2, 4, 5), 2), {"padding": 1, "stride": 2, "dilation": (2, 1)},
                   name="unbatched")]


def _fold_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 12, 12), (5, 4), 2), name="plain"),
            Sample((r(8, 9), (5, 4), 2), {"padding": 1, "stride": 2, "dilation": (2, 1)},
                   name="unbatched")]


def _unfold_grad(dtype, rng):
    return [Sample((rng.standard_normal((1, 2, 4, 3)), 2), {"padding": 1, "stride": (2, 1)})]


def _fold_grad(dtype, rng):
    return [Sample((rng.standard_normal((1, 8, 12)), (4, 3), 2), {"padding": 1,
                                                                  "stride": (2, 1)})]


OPINFOS = [
    OpInfo("conv2d", _conv_ref, _conv2d_samples, method=False, grad_samples=_conv2d_grad),
    OpInfo("conv1d", _conv_ref, _conv1d_samples, method=False, grad_samples=_conv1d_grad),
    OpInfo("conv_transpose2d", _conv_t_ref, _convt2d_samples, method=False,
           grad_samples=_convt2d_grad),
    OpInfo("conv_transpose1d", _conv_t_ref, _convt1d_samples, method=False,
           grad_samples=_convt1d_grad),
    OpInfo("max_pool2d", _max_pool_ref(2), _pool_samples(2), method=False,
           grad_samples=_pool_grad(2, {"stride": 2, "padding": 1, "ceil_mode": True})),
    OpInfo("max_pool2d_with_indices", _max_pool_ref(2),
           lambda dt, rng: [Sample(s.args, dict(s.kwargs, return_indices=True), s.name)
                            for s in _pool_samples(2)(dt, rng)],
           op=F.max_pool2d, method=False, grad=False, jvp=False),
    OpInfo("max_pool1d", _max_pool_ref(1), _pool_samples(1), method=False,
           grad_samples=_pool_grad(1, {"stride": 2, "dilation": 2})),
    OpInfo("max_pool1d_with_indices",
           lambda *a, **k: _max_pool_ref(1)(*a, return_indices=True, **k), _pool_samples(1),
           method=False, grad_samples=_pool_grad(1, {"padding": 1})),
    OpInfo("avg_pool2d", _avg_pool_ref(2), _avg_samples(2), op=F.avg_pool2d, method=False,
           grad_samples=_pool_grad(2, {"stride": 2, "padding": 1, "ceil_mode": True,
                                       "count_include_pad": False})),
    OpInfo("avg_pool1d", _avg_pool_ref(1), _avg_samples(1), method=False,
           grad_samples=_pool_grad(1, {"stride": 2, "padding": 1})),
    OpInfo("adaptive_avg_pool2d", _adaptive_ref(2, "avg"), _adaptive_samples(2),
           op=F.adaptive_avg_pool2d, method=False, grad_samples=_adaptive_grad(2)),
    OpInfo("adaptive_avg_pool1d", _adaptive_ref(1, "avg"), _adaptive_samples(1), method=False,
           grad_samples=_adaptive_grad(1)),
    OpInfo("adaptive_max_pool2d", _adaptive_ref(2, "max"),
           _adaptive_samples(2, {"return_indices": True}), op=F.adaptive_max_pool2d,
           method=False, grad_samples=_adaptive_grad(2)),
    # torch.adaptive_max_pool1d (top level) always returns (values, indices)
    OpInfo("adaptive_max_pool1d", lambda x, o: _adaptive_ref(1, "max")(x, o, True),
           _adaptive_samples(1), method=False, grad_samples=_adaptive_grad(1)),
    OpInfo("unfold", _unfold_ref, _unfold_samples, op=F.unfold, method=False,
           grad_samples=_unfold_grad),
    OpInfo("fold", _fold_ref, _fold_samples, op=F.fold, method=False, grad_samples=_fold_grad),
]

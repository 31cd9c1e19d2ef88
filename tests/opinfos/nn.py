"""OpInfo entries for `jitorch.nn.functional` (src/jitorch/_ops/nn_*.py).

References are written independently in NumPy/SciPy (float64, from the defining formulas), not
ported from the implementations. Activation samples include an "edge" sample (inf, -inf, nan,
0) where the formula is unambiguous; gradient samples are float64 draws that stay away from
kinks with probability ~1.
"""
import math

import numpy as np
import scipy.special as sps

import jitorch
import jitorch.nn.functional as F
from opinfo import FLOATS, OpInfo, Sample

INTS_TOO = FLOATS + (jitorch.int64,)
INF, NAN = np.inf, np.nan
SELU_A = 1.6732632423543772848170429916717
SELU_S = 1.0507009873554804934193349852946


def _f64(a):
    return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


def _ref64(fn):
    """A reference computed in float64 (float32 inputs: the test reads the result as float32)."""
    def ref(*args, **kwargs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[_f64(a) for a in args], **kwargs))
    return ref


def _act_samples(kwargs=None, edge=True, lo=-4.0, hi=4.0):
    kw = kwargs or {}

    def gen(dtype, rng):
        dtype = np.dtype(dtype)

        def r(*shape):
            if dtype.kind in "iu":
                return rng.integers(-6, 7, size=shape).astype(dtype)
            return rng.uniform(lo, hi, size=shape).astype(dtype)
        # few samples: the jit OpInfo test compiles one loop per sample
        out = [Sample((r(2, 3, 2),), dict(kw), "3d"), Sample((r(),), dict(kw), "0d"),
               Sample((r(0, 3),), dict(kw), "empty")]
        if edge and dtype.kind == "f":
            out.append(Sample((np.array([INF, -INF, NAN, 0.0, 1.0, -1.0], dtype),), dict(kw),
                              "edge"))
        return out
    return gen


def _grad(kwargs=None, lo=-4.0, hi=4.0):
    kw = kwargs or {}

    def gen(dtype, rng):
        return [Sample((rng.uniform(lo, hi, size=(2, 5)),), dict(kw), "2d"),
                Sample((np.asarray(rng.uniform(lo, hi)),), dict(kw), "0d")]
    return gen


def _act(name, ref, kwargs=None, dtypes=FLOATS, edge=True, method=False, **kw):
    return OpInfo(name, ref, _act_samples(kwargs, edge), dtypes=dtypes, method=method,
                  op=getattr(F, name), grad_samples=_grad(kwargs), **kw)


def _keep(fn):
    """A reference on the input's own dtype (integer activations stay integer)."""
    def ref(x, *args, **kwargs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, *args, **kwargs)).astype(x.dtype)
    return ref


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _erf_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + sps.erf(x / math.sqrt(2)))


def _relu6_of(v):
    return np.where(v < 0, 0, np.where(v > 6, 6, v))


def _log_softmax_ref(x, dim):
    s = x - np.max(x, axis=dim, keepdims=True)  # +inf in a row makes the whole row nan
    return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))


ACTIVATIONS = [
    OpInfo("relu", _keep(lambda x: np.where(np.isnan(x) | (x > 0), x, 0)),
           _act_samples(), dtypes=INTS_TOO, grad_samples=_grad()),
    OpInfo("relu6", _keep(lambda x: np.where(x < 0, 0, np.where(x > 6, 6, x))),
           _act_samples(lo=-3.0, hi=8.0), dtypes=INTS_TOO, method=False, op=F.relu6,
           grad_samples=_grad(lo=-3.0, hi=8.0)),
    _act("hardtanh", _keep(lambda x, min_val=-1.0, max_val=1.0:
                           np.where(x < min_val, min_val, np.where(x > max_val, max_val, x))),
         {"min_val": -2.0, "max_val": 3.0}, dtypes=INTS_TOO),
    _act("leaky_relu", _ref64(lambda x, negative_slope=0.01:
                              np.where(x > 0, x, negative_slope * x)), {"negative_slope": 0.2}),
    _act("threshold", _keep(lambda x, threshold, value: np.where(x <= threshold, value, x)),
         {"threshold": 1.0, "value": -2.0}, dtypes=INTS_TOO),
    _act("softshrink", _ref64(lambda x, lambd=0.5: np.where(
        x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0))), {"lambd": 1.5}),
    _act("hardshrink", _ref64(lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, x * 0)),
         {"lambd": 1.5}),
    _act("elu", _ref64(lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x))),
         {"alpha": 0.7}),
    _act("selu", _ref64(lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)))),
    _act("celu", _ref64(lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x / alpha))),
         {"alpha": 1.5}),
    _act("softplus", _ref64(_softplus), {"beta": 2.0, "threshold": 5.0}),
    _act("logsigmoid", _ref64(lambda x: -np.logaddexp(0, -x))),
    _act("gelu", _ref64(_erf_gelu)),
    OpInfo("gelu_tanh", _ref64(_erf_gelu),
           _act_samples({"approximate": "tanh"}, edge=False), method=False, op=F.gelu,
           grad_samples=_grad({"approximate": "tanh"})),
    _act("silu", _ref64(lambda x: x * sps.expit(x))),
    _act("mish", _ref64(lambda x: x * np.tanh(np.logaddexp(0, x)))),
    _act("hardsigmoid", _ref64(lambda x: _relu6_of(x + 3) / 6)),
    _act("hardswish", _ref64(lambda x: x * _relu6_of(x + 3) / 6)),
    _act("softsign", _ref64(lambda x: x / (1 + np.abs(x)))),
    _act("tanhshrink", _ref64(lambda x: x - np.tanh(x))),
]


# --- softmax family ------------------------------------------------------------------------------
def _dim_samples(dims=(1, 0, -1)):
    def gen(dtype, rng):
        x = (rng.standard_normal((3, 5)) * 3).astype(dtype)
        y = (rng.standard_normal((2, 3, 4)) * 3).astype(dtype)
        return [Sample((x,), {"dim": dims[1]}, "2d-dim0"),
                Sample((y,), {"dim": dims[2]}, "3d-last"),
                Sample((np.array([-INF, 0.0, 1.0, 1000.0], dtype),), {"dim": 0}, "edge")]
    return gen


def _dim_grad(dtype, rng):
    return [s for s in _dim_samples()(dtype, rng) if s.name != "edge"]


def _softmax_ref(x, dim):
    return np.exp(_log_softmax_ref(x, dim))


SOFTMAX = [
    OpInfo("softmax", _ref64(_softmax_ref), _dim_samples(), op=F.softmax, method=False,
           grad_samples=_dim_grad, interpreted_exact=False),
    OpInfo("log_softmax", _ref64(_log_softmax_ref), _dim_samples(), op=F.log_softmax,
           method=False, grad_samples=_dim_grad, interpreted_exact=False),
    OpInfo("softmin", _ref64(lambda x, dim: _softmax_ref(-x, dim)), _dim_samples(),
           op=F.softmin, method=False, grad_samples=_dim_grad),
]


# --- linear / norms ------------------------------------------------------------------------------
def _rand(rng, dtype, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def _linear_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 3, 4), _rand(rng, dtype, 5, 4), _rand(rng, dtype, 5)),
                   name="bias"),
            Sample((_rand(rng, dtype, 2, 3, 4), _rand(rng, dtype, 2, 4)), name="3d")]


def _linear_ref(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def _ln_ref(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _ln_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 3, 5), (5,), _rand(rng, dtype, 5), _rand(rng, dtype, 5)),
                   name="affine"),
            Sample((_rand(rng, dtype, 2, 3, 4), (3, 4)), {"eps": 1e-3}, name="2dims")]


def _rms_ref(x, shape, w=None, eps=None):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    eps = np.finfo(x.dtype).eps if eps is None else eps
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def _rms_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 3, 5), (5,), _rand(rng, dtype, 5)), name="weight"),
            Sample((_rand(rng, dtype, 2, 3, 4), (3, 4)), {"eps": 0.1}, name="2dims")]


def _rms_ref_typed(x, shape, w=None, eps=None):
    # eps=None means the *input* dtype's epsilon: read it before widening to float64
    eps = np.finfo(x.dtype).eps if eps is None else eps
    return _ref64(_rms_ref)(x, shape, w, eps=eps)


def _gn_ref(x, g, w=None, b=None, eps=1e-5):
    n, c = x.shape[:2]
    xr = x.reshape(n, g, -1)
    m = xr.mean(-1, keepdims=True)
    v = ((xr - m) ** 2).mean(-1, keepdims=True)
    y = ((xr - m) / np.sqrt(v + eps)).reshape(x.shape)
    sh = (1, c) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(sh)) + (0 if b is None else b.reshape(sh))


def _gn_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 2, 4, 3), 2, _rand(rng, dtype, 4), _rand(rng, dtype, 4)),
                   name="affine"),
            Sample((_rand(rng, dtype, 2, 6, 2, 2), 3), {"eps": 1e-3}, name="4d")]


def _bn_ref(x, rm, rv, w=None, b=None, training=False, momentum=0.1, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    sh = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        m = x.mean(axis=axes, keepdims=True)
        v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    else:
        m, v = rm.reshape(sh), rv.reshape(sh)
    y = (x - m) / np.sqrt(v + eps)
    return y * (1 if w is None else w.reshape(sh)) + (0 if b is None else b.reshape(sh))


def _bn_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 4, 3), _rand(rng, dtype, 3),
                    _rand(rng, dtype, 3, lo=0.5, hi=2.0), _rand(rng, dtype, 3),
                    _rand(rng, dtype, 3)), name="eval"),
            Sample((_rand(rng, dtype, 3, 2, 4), None, None, _rand(rng, dtype, 2)),
                   {"training": True}, name="train")]


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    n = np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p)
    return x / np.maximum(n, eps)


def _normalize_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 3, 4),), name="p2"),
            Sample((_rand(rng, dtype, 2, 3, 2),), {"p": 3.0, "dim": 0}, name="p3")]


NORMS = [
    OpInfo("linear", _ref64(_linear_ref), _linear_samples, op=F.linear, method=False),
    OpInfo("layer_norm", _ref64(_ln_ref), _ln_samples, op=F.layer_norm, method=False),
    OpInfo("rms_norm", _rms_ref_typed, _rms_samples, op=F.rms_norm, method=False),
    OpInfo("group_norm", _ref64(_gn_ref), _gn_samples, op=F.group_norm, method=False),
    OpInfo("batch_norm", _ref64(_bn_ref), _bn_samples, op=F.batch_norm, method=False),
    OpInfo("normalize", _ref64(_normalize_ref), _normalize_samples, op=F.normalize,
           method=False),
]


# --- losses --------------------------------------------------------------------------------------
def _reduce(loss, reduction="mean"):
    return {"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](loss)


def _pair_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 3, 4), _rand(rng, dtype, 3, 4)), name="mean"),
            Sample((_rand(rng, dtype, 5), _rand(rng, dtype, 5)), {"reduction": "sum"},
                   name="sum"),
            Sample((_rand(rng, dtype, 2, 3), _rand(rng, dtype, 2, 3)), {"reduction": "none"},
                   name="none")]


def _pair_kw(extra):
    def gen(dtype, rng):
        out = _pair_samples(dtype, rng)
        for s in out:
            s.kwargs.update(extra)
        return out
    return gen


def _mse_ref(x, y, reduction="mean"):
    return _reduce((x - y) ** 2, reduction)


def _l1_ref(x, y, reduction="mean"):
    return _reduce(np.abs(x - y), reduction)


def _sl1_ref(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _huber_ref(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def _class_samples(dtype, rng):
    x = _rand(rng, dtype, 4, 5, lo=-3, hi=3)
    t = np.array([1, 0, 4, 2])
    t_ign = np.array([1, -100, 4, 2])
    w = _rand(rng, dtype, 5, lo=0.5, hi=2.0)
    return [Sample((x, t), name="plain"),
            Sample((x, t_ign, w), name="weight-ignore"),
            Sample((x, t_ign, w), {"label_smoothing": 0.2}, name="smoothing"),
            Sample((x, t_ign), {"label_smoothing": 0.3, "reduction": "sum"}, name="smooth-sum"),
            Sample((_rand(rng, dtype, 2, 3, 2), np.array([[0, 2], [1, 1]])), {"reduction": "none"},
                   name="3d-none"),
            Sample((_rand(rng, dtype, 5), np.array(3)), name="unbatched")]


def _nll_core(logp, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    logp = np.moveaxis(logp, 1, -1) if logp.ndim > 1 else logp
    c = logp.shape[-1]
    w = np.ones(c) if w is None else w
    mask = t != ignore_index
    safe = np.where(mask, t, 0)
    picked = np.take_along_axis(logp, safe[..., None], -1)[..., 0]
    wt = w[safe] * mask
    loss = -picked * wt
    if label_smoothing:
        smooth = -(logp * w).sum(-1) * mask
        loss = (1 - label_smoothing) * loss + label_smoothing / c * smooth
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


def _ce_ref(x, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    return _nll_core(_log_softmax_ref(x, 1 if x.ndim > 1 else 0), t, w, ignore_index,
                     reduction, label_smoothing)


def _ce_prob_samples(dtype, rng):
    x = _rand(rng, dtype, 4, 5, lo=-3, hi=3)
    p = rng.uniform(0, 1, (4, 5))
    p = (p / p.sum(1, keepdims=True)).astype(dtype)
    w = _rand(rng, dtype, 5, lo=0.5, hi=2.0)
    return [Sample((x, p), name="probs"),
            Sample((x, p, w), {"label_smoothing": 0.1, "reduction": "none"},
                   name="weight-smoothing-none")]


def _ce_prob_ref(x, p, w=None, reduction="mean", label_smoothing=0.0):
    c = x.shape[1]
    p = p * (1 - label_smoothing) + label_smoothing / c
    lp = _log_softmax_ref(x, 1) * (1 if w is None else w)
    loss = -(lp * p).sum(1)
    return loss.mean() if reduction == "mean" else _reduce(loss, reduction)


def _nll_samples(dtype, rng):
    lp = _log_softmax_ref(rng.uniform(-3, 3, (4, 5)), 1).astype(dtype)
    w = _rand(rng, dtype, 5, lo=0.5, hi=2.0)
    return [Sample((lp, np.array([1, 0, 4, 2])), name="plain"),
            Sample((lp, np.array([1, -100, 4, 2]), w), name="weight-ignore"),
            Sample((lp, np.array([3, 3, 0, 1]), w), {"reduction": "sum"}, name="sum"),
            Sample((lp, np.array([0, 7, 4, 2])), {"ignore_index": 7, "reduction": "none"},
                   name="ignore7")]


def _bce_samples(dtype, rng):
    x = rng.uniform(0.05, 0.95, (3, 4)).astype(dtype)
    t = rng.uniform(0, 1, (3, 4)).astype(dtype)
    w = _rand(rng, dtype, 4, lo=0.5, hi=2.0)
    return [Sample((x, t), name="plain"), Sample((x, t, w), {"reduction": "sum"}, name="weight"),
            Sample((x, t), {"reduction": "none"}, name="none")]


def _bce_ref(x, t, w=None, reduction="mean"):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))
    return _reduce(loss * (1 if w is None else w), reduction)


def _bcel_samples(dtype, rng):
    x = _rand(rng, dtype, 3, 4, lo=-5, hi=5)
    t = rng.uniform(0, 1, (3, 4)).astype(dtype)
    pw = _rand(rng, dtype, 4, lo=0.5, hi=3.0)
    return [Sample((x, t), name="plain"),
            Sample((x, t, None, None, None, "sum", pw), name="pos_weight"),
            Sample((x, t, _rand(rng, dtype, 4, lo=0.5, hi=2.0)), {"reduction": "none"},
                   name="weight")]


def _bcel_ref(x, t, w=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    pw = 1 if pos_weight is None else pos_weight
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    loss = -(pw * t * log_sig + (1 - t) * log_one_minus)
    return _reduce(loss * (1 if w is None else w), reduction)


def _kl_samples(dtype, rng):
    lq = _log_softmax_ref(rng.uniform(-2, 2, (3, 4)), 1).astype(dtype)
    p = rng.uniform(0.05, 1, (3, 4)).astype(dtype)
    return [Sample((lq, p), {"reduction": "batchmean"}, name="batchmean"),
            Sample((lq, p), {"reduction": "sum"}, name="sum"),
            Sample((lq, np.log(p)), {"reduction": "none", "log_target": True}, name="log")]


def _kl_ref(lq, p, reduction="mean", log_target=False):
    loss = np.exp(p) * (p - lq) if log_target else p * (np.log(p) - lq)
    if reduction == "batchmean":
        return loss.sum() / lq.shape[0]
    return _reduce(loss, reduction)


def _cos_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 4, 3), _rand(rng, dtype, 4, 3),
                    np.array([1.0, -1.0, 1.0, -1.0], dtype)), {"margin": 0.1}, name="mean"),
            Sample((_rand(rng, dtype, 3), _rand(rng, dtype, 3), np.array(-1.0, dtype)),
                   {"reduction": "none"}, name="1d")]


def _cos_ref(a, b, t, margin=0.0, reduction="mean"):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    loss = np.where(t == 1, 1 - cos, np.where(t == -1, np.maximum(cos - margin, 0), 0))
    return _reduce(loss, reduction)


def _mrl_samples(dtype, rng):
    return [Sample((_rand(rng, dtype, 6), _rand(rng, dtype, 6),
                    np.array([1, -1, 1, -1, 1, 1], dtype)), {"margin": 0.3}, name="mean"),
            Sample((_rand(rng, dtype, 2, 3), _rand(rng, dtype, 2, 3),
                    np.sign(_rand(rng, dtype, 2, 3))), {"reduction": "none"}, name="none")]


def _mrl_ref(a, b, t, margin=0.0, reduction="mean"):
    return _reduce(np.maximum(-t * (a - b) + margin, 0), reduction)


def _loss(name, ref, samples, **kw):
    return OpInfo(name, _ref64(ref), samples, op=getattr(F, name), method=False, **kw)


LOSSES = [
    _loss("mse_loss", _mse_ref, _pair_samples),
    _loss("l1_loss", _l1_ref, _pair_samples),
    _loss("smooth_l1_loss", _sl1_ref, _pair_kw({"beta": 0.5})),
    _loss("huber_loss", _huber_ref, _pair_kw({"delta": 0.7})),
    _loss("cross_entropy", _ce_ref, _class_samples, skip_grad_args=(2,)),
    OpInfo("cross_entropy_probs", _ref64(_ce_prob_ref), _ce_prob_samples, op=F.cross_entropy,
           method=False, skip_grad_args=(2,)),
    _loss("nll_loss", _nll_core, _nll_samples, skip_grad_args=(2,)),
    _loss("binary_cross_entropy", _bce_ref, _bce_samples, skip_grad_args=(2,)),
    _loss("binary_cross_entropy_with_logits", _bcel_ref, _bcel_samples,
          skip_grad_args=(2, 6)),
    _loss("kl_div", _kl_ref, _kl_samples),
    _loss("cosine_embedding_loss", _cos_ref, _cos_samples, skip_grad_args=(2,)),
    _loss("margin_ranking_loss", _mrl_ref, _mrl_samples, skip_grad_args=(2,)),
]


# --- one_hot / embedding / dropout (deterministic cases) -----------------------------------------
def _one_hot_samples(dtype, rng):
    return [Sample((np.array([1, 0, 4, 2]),), name="infer"),
            Sample((np.array([[0, 2], [1, 1]]), 4), name="classes")]


def _one_hot_ref(t, num_classes=-1):
    n = t.max() + 1 if num_classes == -1 else num_classes
    return (t[..., None] == np.arange(n)).astype(np.int64)


def _emb_samples(dtype, rng):
    w = _rand(rng, dtype, 5, 3)
    return [Sample((np.array([1, 0, 4, 1]), w), name="plain"),
            Sample((np.array([[1, 0], [4, 1]]), w, 1), name="padding_idx")]


def _emb_ref(idx, w, padding_idx=None):
    return w[idx]


def _dropout_samples(dtype, rng):
    x = _rand(rng, dtype, 3, 4)
    return [Sample((x,), {"p": 0.0}, name="p0"), Sample((x, 0.5, False), name="eval")]


def _pad_samples(dtype, rng):
    x3 = _rand(rng, dtype, 2, 3, 4)
    return [Sample((x3, (1, 2, -1, 1)), {"value": 1.5}, name="constant"),
            Sample((x3, (2, 3), "reflect"), name="reflect"),
            Sample((x3, (1, 2, 3, 0), "replicate"), name="replicate"),
            Sample((x3, (-1, 2, 2, 0), "circular"), name="circular")]


def _pad_ref(x, pad, mode="constant", value=None):
    width = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        x = np.take(x, np.arange(max(-lo, 0), x.shape[d] - max(-hi, 0)), axis=d)  # crop
        width[d] = (max(lo, 0), max(hi, 0))
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    kw = {"constant_values": 0.0 if value is None else value} if mode == "constant" else {}
    return np.pad(x, width, mode=np_mode, **kw)


MISC = [
    OpInfo("pad", _ref64(_pad_ref), _pad_samples, op=F.pad, method=False),
    OpInfo("one_hot", _one_hot_ref, _one_hot_samples, dtypes=(jitorch.int64,), grad=False,
           jvp=False, op=F.one_hot, method=False),
    # the padding_idx row gets no gradient (as in PyTorch), which finite differences disagree
    # with: gradients are checked on the plain sample here, padding in test_nn_functional.py
    OpInfo("embedding", _ref64(_emb_ref), _emb_samples, op=F.embedding, method=False,
           skip_grad_args=(0,), grad_samples=lambda d, rng: _emb_samples(d, rng)[:1]),
    OpInfo("dropout", _ref64(lambda x, p=0.5, training=True: x), _dropout_samples,
           op=F.dropout, method=False),
]

OPINFOS = ACTIVATIONS + SOFTMAX + NORMS + LOSSES + MISC

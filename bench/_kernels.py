"""Hand-written Numba kernels: the ideal a generated program can reach on this backend.

Each is what a careful human writes: `njit(nogil=True, error_model="numpy",
fastmath={"reassoc", "contract"})`, explicit loops over C-contiguous float32 arrays, typed
literals, outputs allocated by NumPy outside the kernel (measured faster than np.empty
inside), BLAS via np.dot. Numba has no SVML (float32 libm calls do not vectorise), so the
transcendentals go through `tanh_fast`, a rational approximation (Eigen's; max abs error ~2e-7
against np.tanh) that vectorises: sigmoid(v) = (1 + tanh(v/2)) / 2 exactly, and softmax's
exp(d) for d <= 0 as (1 + t) / (1 - t) with t = tanh(d/2) (absolute error ~1e-7, which a
softmax normalised by a sum >= 1 keeps absolute).
Set NUMBA_CACHE_DIR to control where `cache=True` writes.
"""
import numba
import numpy as np

OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)
f32 = np.float32


@numba.njit(inline="always", **OPTS)
def tanh_fast(x):
    x = min(max(x, f32(-7.90531110763549805)), f32(7.90531110763549805))
    x2 = x * x
    p = f32(-2.76076847742355e-16)
    p = p * x2 + f32(2.00018790482477e-13)
    p = p * x2 + f32(-8.60467152213735e-11)
    p = p * x2 + f32(5.12229709037114e-08)
    p = p * x2 + f32(1.48572235717979e-05)
    p = p * x2 + f32(6.37261928875436e-04)
    p = p * x2 + f32(4.89352455891786e-03)
    p = p * x
    q = f32(1.19825839466702e-06)
    q = q * x2 + f32(1.18534705686654e-04)
    q = q * x2 + f32(2.26843463243900e-03)
    q = q * x2 + f32(4.89352518554385e-03)
    return p / q


@numba.njit(**OPTS)
def _gelu(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = f32(0.5) * v * (f32(1.0) + tanh_fast(
            f32(0.7978845608028654) * (v + f32(0.044715) * v * v * v)))


def gelu_tanh(x):
    out = np.empty_like(x)
    _gelu(x.reshape(-1), out.reshape(-1))
    return out


@numba.njit(**OPTS)
def _bias_relu(x, b, out):
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            out[i, j] = max(x[i, j] + b[j], f32(0.0))


def bias_relu(x, b):
    out = np.empty_like(x)
    _bias_relu(x, b, out)
    return out


@numba.njit(**OPTS)
def _layernorm_softmax(x, w, b, out):
    n, m = x.shape
    inv_m = f32(1.0) / f32(m)
    for i in range(n):
        s = f32(0.0)
        for j in range(m):
            s += x[i, j]
        mu = s * inv_m
        s2 = f32(0.0)
        for j in range(m):
            d = x[i, j] - mu
            s2 += d * d
        r = f32(1.0) / np.sqrt(s2 * inv_m + f32(1e-5))
        mx = f32(-np.inf)
        for j in range(m):
            y = (x[i, j] - mu) * r * w[j] + b[j]
            out[i, j] = y
            mx = max(mx, y)
        tot = f32(0.0)
        for j in range(m):
            t = tanh_fast(f32(0.5) * (out[i, j] - mx))
            e = (f32(1.0) + t) / (f32(1.0) - t)
            out[i, j] = e
            tot += e
        inv = f32(1.0) / tot
        for j in range(m):
            out[i, j] *= inv


def layernorm_softmax(x, w, b):
    out = np.empty_like(x)
    _layernorm_softmax(x, w, b, out)
    return out


@numba.njit(**OPTS)
def _bias_relu_inplace(h, b):
    n, m = h.shape
    for i in range(n):
        for j in range(m):
            h[i, j] = max(h[i, j] + b[j], f32(0.0))


@numba.njit(**OPTS)
def _mlp(x, w1, b1, w2, b2, w3, b3, h1, h2, out):
    np.dot(x, w1, h1)
    _bias_relu_inplace(h1, b1)
    np.dot(h1, w2, h2)
    _bias_relu_inplace(h2, b2)
    np.dot(h2, w3, out)
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            out[i, j] += b3[j]


def mlp(x, w1, b1, w2, b2, w3, b3):
    n = x.shape[0]
    h1 = np.empty((n, w1.shape[1]), np.float32)
    h2 = np.empty((n, w2.shape[1]), np.float32)
    out = np.empty((n, w3.shape[1]), np.float32)
    _mlp(x, w1, b1, w2, b2, w3, b3, h1, h2, out)
    return out


@numba.njit(inline="always", **OPTS)
def _sigmoid(v):
    return f32(0.5) + f32(0.5) * tanh_fast(f32(0.5) * v)


@numba.njit(**OPTS)
def _lstm(x, h0, c0, w_ih, w_hh, b, h, c):
    T, B = x.shape[0], x.shape[1]
    H = h0.shape[1]
    h[:] = h0
    c[:] = c0
    g1 = np.empty((B, 4 * H), np.float32)
    g2 = np.empty((B, 4 * H), np.float32)
    for t in range(T):
        np.dot(x[t], w_ih, g1)
        np.dot(h, w_hh, g2)
        for i in range(B):
            for j in range(H):
                gi = _sigmoid(g1[i, j] + g2[i, j] + b[j])
                gf = _sigmoid(g1[i, H + j] + g2[i, H + j] + b[H + j])
                gg = tanh_fast(g1[i, 2 * H + j] + g2[i, 2 * H + j] + b[2 * H + j])
                go = _sigmoid(g1[i, 3 * H + j] + g2[i, 3 * H + j] + b[3 * H + j])
                cc = gf * c[i, j] + gi * gg
                c[i, j] = cc
                h[i, j] = go * tanh_fast(cc)


def lstm(x, h0, c0, w_ih, w_hh, b):
    h = np.empty_like(h0)
    c = np.empty_like(c0)
    _lstm(x, h0, c0, w_ih, w_hh, b, h, c)
    return h, c


@numba.njit(**OPTS)
def _add(a, b, out):
    for i in range(a.size):
        out[i] = a[i] + b[i]


def add(a, b):
    out = np.empty_like(a)
    _add(a, b, out)
    return out

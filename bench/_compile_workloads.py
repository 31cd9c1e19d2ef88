"""The workloads of bench/compile_time.py, built for one peer inside a fresh child process.

`build(peer, name)` returns `(go, serve)`: everything untimed (imports, the model, its weights,
the batch) is done when it returns; `go()` is what the cold-compile clock measures (script /
jit the model, run the first result: a forward, or a forward + cross entropy + backward) and
returns the compiled callables; `serve()` runs one more step (the compiled program, once it
serves). The same model source runs on jitorch and PyTorch (bench/_train_models.py,
bench/_workloads.py); JAX gets hand-written ports of the same models (same shapes, same ops:
PyTorch's post-norm TransformerEncoderLayer with ReLU, the LSTM loop as `lax.scan`).

Workloads (float32): gelu (tanh GELU, 4e3 elements), mlp_infer (784-256-256-10, batch 32,
no grad), mlp_train (the same, cross entropy + backward), lstm (the LSTM cell of
bench/_workloads.py over 50 steps in the compiled loop, batch 16, 32 -> 64, loss h.sum() +
c.sum(), backward), cnn (bench/_train_models.py's CNN, batch 32, 1x28x28, train step),
encoder1 / encoder2 (its TransformerEncoder classifier with 1 / 2 layers, d 64, 4 heads,
ff 128, seq 16, batch 8, train step). `prime` is not a workload: the "new model" cache state's
different model (see compile_time.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

WORKLOADS = ("gelu", "mlp_infer", "mlp_train", "lstm", "cnn", "encoder1", "encoder2")
TRAIN = {"mlp_train", "cnn", "encoder1", "encoder2"}
MLP = (784, 256, 256, 10)
T, B, I, H = 50, 16, 32, 64


def data(name):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    ints = lambda n, k=10: rng.integers(0, k, n).astype(np.int64)  # noqa: E731
    if name == "gelu":
        return (f(4000),)
    if name in ("mlp_infer", "mlp_train"):
        return f(32, 784), ints(32)
    if name == "lstm":
        s = np.float32(1 / np.sqrt(H))  # a float64 scalar would make float64 weights
        return (f(T, B, I), np.zeros((B, H), np.float32), np.zeros((B, H), np.float32),
                s * f(I, 4 * H), s * f(H, 4 * H), np.zeros(4 * H, np.float32))
    if name == "cnn":
        return f(32, 1, 28, 28), ints(32)
    if name.startswith("encoder"):  # (encoder4: a deeper model, bench/glue_runs.py)
        return f(8, 16, 64), ints(8)
    if name == "prime":
        return f(16, 64), f(16, 4)
    raise KeyError(name)


def _mlp(nn):
    layers = []
    for i in range(len(MLP) - 1):
        layers.append(nn.Linear(MLP[i], MLP[i + 1]))
        if i < len(MLP) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _model(tm, nn, name):
    if name.startswith("mlp"):
        return _mlp(nn)
    if name == "cnn":
        return tm.cnn()
    if name.startswith("encoder"):
        return tm.EncoderClassifier(layers=int(name[-1]))
    raise KeyError(name)


def build(peer: str, name: str):
    if peer == "jax":
        return _build_jax(name)
    import _harness
    if peer == "jitorch":  # one BLAS thread: the parent sets OPENBLAS_NUM_THREADS=1
        import jitorch as bk
        compile_ = bk.jit.script
    else:
        import torch as bk
        compile_ = bk.jit.script if peer == "TorchScript" else bk.compile
        bk.set_num_threads(1)
    arrays = data(name)
    if name == "prime":  # a different model: Linear-Tanh-Linear with an MSE loss, train step
        nn = bk.nn
        model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 4))

        class MSE(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x, y):
                return nn.functional.mse_loss(self.m(x), y)
        wrapped = MSE(model)
        x, y = (bk.from_numpy(a) for a in arrays)

        def go():
            f = compile_(wrapped)
            f(x, y).backward()
            return [f]
        return go, None
    if name in ("gelu", "lstm"):
        wl = _harness.load_workloads(bk, f"_cw_{peer.replace('.', '_')}")
        fn = wl.gelu_tanh if name == "gelu" else wl.lstm
        args = [bk.from_numpy(a.copy()) for a in arrays]
        if name == "lstm":
            for a in args[3:]:
                a.requires_grad_(True)
        box = {}

        def run(f):
            out = f(*args)
            if name == "lstm":
                (out[0].sum() + out[1].sum()).backward()
            return out

        def go():
            box["f"] = f = compile_(fn)
            run(f)
            return [f]
        return go, lambda: run(box["f"])
    tm = __import__("_train_models").load(bk, f"_cw_models_{peer.replace('.', '_')}")
    bk.manual_seed(0)
    model = _model(tm, bk.nn, name)
    x, y = (bk.from_numpy(a.copy()) for a in arrays)
    box = {}
    if name == "mlp_infer":
        model.eval()

        def run(f):
            with bk.no_grad():
                return f(x)

        def go():
            box["f"] = f = compile_(model)
            run(f)
            return [f]
    else:
        wrapped = tm.WithLoss(model)

        def run(f):
            loss = f(x, y)
            loss.backward()
            return loss

        def go():
            box["f"] = f = compile_(wrapped)
            run(f)
            return [f]
    return go, lambda: run(box["f"])


# --- JAX ports ----------------------------------------------------------------------------------
def _build_jax(name):
    import jax
    import jax.numpy as jnp
    from jax import lax
    jax.config.update("jax_platforms", "cpu")
    arrays = [jnp.asarray(a) for a in data(name)]
    rng = np.random.default_rng(1)

    def w(*s):
        return jnp.asarray((rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32))

    def ce(logits, y):
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], 1))

    def linear(p, x):
        return x @ p[0].T + p[1]

    if name == "gelu":
        def f(x):
            return 0.5 * x * (1.0 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
        fn, args = jax.jit(f), arrays
    elif name == "prime":
        raise KeyError("prime")
    elif name.startswith("mlp"):
        params = [(w(MLP[i + 1], MLP[i]), jnp.zeros(MLP[i + 1], jnp.float32))
                  for i in range(len(MLP) - 1)]

        def fwd(params, x):
            for p in params[:-1]:
                x = jax.nn.relu(linear(p, x))
            return linear(params[-1], x)
        if name == "mlp_infer":
            fn, args = jax.jit(fwd), (params, arrays[0])
        else:
            fn = jax.jit(jax.value_and_grad(lambda p, x, y: ce(fwd(p, x), y)))
            args = (params, arrays[0], arrays[1])
    elif name == "lstm":
        x, h0, c0, w_ih, w_hh, b = arrays

        def loss(ws, x, h0, c0):
            w_ih, w_hh, b = ws

            def cell(carry, xt):
                h, c = carry
                gates = xt @ w_ih + h @ w_hh + b
                i, f, g, o = jnp.split(gates, 4, 1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), None
            (h, c), _ = lax.scan(cell, (h0, c0), x)
            return h.sum() + c.sum()
        fn = jax.jit(jax.value_and_grad(loss))
        args = ((w_ih, w_hh, b), x, h0, c0)
    elif name == "cnn":
        params = {"c1": (w(8, 1, 3, 3), jnp.zeros(8)), "c2": (w(16, 8, 3, 3), jnp.zeros(16)),
                  "fc": (w(10, 784), jnp.zeros(10))}

        def conv(p, x):
            y = lax.conv_general_dilated(x, p[0], (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return y + p[1][None, :, None, None]

        def pool(x):
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def fwd(p, x):
            x = pool(jax.nn.relu(conv(p["c1"], x)))
            x = pool(jax.nn.relu(conv(p["c2"], x)))
            return linear(p["fc"], x.reshape(x.shape[0], -1))
        fn = jax.jit(jax.value_and_grad(lambda p, x, y: ce(fwd(p, x), y)))
        args = (params, arrays[0], arrays[1])
    else:  # encoder1 / encoder2: PyTorch's TransformerEncoderLayer (post-norm, ReLU)
        d, heads, ff = 64, 4, 128
        layers = [{"in": (w(3 * d, d), jnp.zeros(3 * d)), "out": (w(d, d), jnp.zeros(d)),
                   "l1": (w(ff, d), jnp.zeros(ff)), "l2": (w(d, ff), jnp.zeros(d)),
                   "n1": (jnp.ones(d), jnp.zeros(d)), "n2": (jnp.ones(d), jnp.zeros(d))}
                  for _ in range(int(name[-1]))]
        params = {"layers": layers, "head": (w(10, d), jnp.zeros(10))}

        def norm(p, x):
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / jnp.sqrt(var + 1e-5) * p[0] + p[1]

        def attn(p, x):
            bsz, t, _ = x.shape
            q, k, v = jnp.split(linear(p["in"], x), 3, -1)
            sh = lambda z: z.reshape(bsz, t, heads, d // heads).transpose(0, 2, 1, 3)  # noqa
            s = sh(q) @ sh(k).transpose(0, 1, 3, 2) / np.sqrt(d // heads)
            o = (jax.nn.softmax(s, -1) @ sh(v)).transpose(0, 2, 1, 3).reshape(bsz, t, d)
            return linear(p["out"], o)

        def fwd(params, x):
            for p in params["layers"]:
                x = norm(p["n1"], x + attn(p, x))
                x = norm(p["n2"], x + linear(p["l2"], jax.nn.relu(linear(p["l1"], x))))
            return linear(params["head"], x.mean(1))
        fn = jax.jit(jax.value_and_grad(lambda p, x, y: ce(fwd(p, x), y)))
        args = (params, arrays[0], arrays[1])

    def go():
        jax.block_until_ready(fn(*args))
        return []
    return go, lambda: jax.block_until_ready(fn(*args))

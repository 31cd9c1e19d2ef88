"""The generic kernel library, compiled ahead of time: `jitorch.jit.warmup()` and
`python -m jitorch.jit warmup`.

Kernels are named by what they compute (targets/cpu/kernel.py), so the kernels of the layers
every model is made of (Linear forward and backward, the activations, softmax and layernorm rows,
cross-entropy, conv/pool, an RNN cell, attention, the optimizer steps) are the same kernels in
every model of the same dtypes and ranks. Warming compiles them once per machine by running
small instances of those layers through `jitorch.jit.script` (forward, backward and an
optimizer step each); later models find them in the disk cache and compile only what is theirs.
Sizes do not matter (kernels never depend on them), so the instances are tiny.
"""
from __future__ import annotations

import time


def _workloads():
    import jitorch
    nn, F = jitorch.nn, jitorch.nn.functional

    class Classifier(nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, x, y):
            out = self.body(x)
            return F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))

    def mlp():
        return (nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(),
                              nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4)),
                jitorch.randn(4, 8), jitorch.randint(0, 4, (4,)))

    def cnn():
        return (nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(8, 4)),
                jitorch.randn(2, 1, 8, 8), jitorch.randint(0, 4, (2,)))

    def encoder():
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        body = nn.Sequential(nn.TransformerEncoder(layer, 1, enable_nested_tensor=False),
                             nn.Linear(8, 4))
        return body, jitorch.randn(2, 3, 8), jitorch.randint(0, 4, (2, 3))

    return [("mlp", Classifier, mlp), ("cnn", Classifier, cnn),
            ("encoder", Classifier, encoder)]


def warmup(verbose: bool = False) -> dict:
    """Compile the generic kernels into the disk cache: {workload: seconds}. Blocks until
    each workload's programs are compiled."""
    import jitorch
    from . import stats
    out = {}
    for name, wrap, build in _workloads():
        t0 = time.perf_counter()
        body, x, y = build()
        model = jitorch.jit.script(wrap(body))
        for make_opt in (lambda p: jitorch.optim.SGD(p, lr=0.01),
                         lambda p: jitorch.optim.Adam(p, lr=0.01)):
            opt = make_opt(model.parameters())
            for _ in range(2):  # (the second step takes the compiled path where there is one)
                opt.zero_grad()
                loss = model(x, y)
                loss.backward()
                opt.step()
        wait = getattr(model, "wait_compiled", None)
        if wait is not None:
            wait()
        out[name] = time.perf_counter() - t0
        if verbose:
            k = stats.snapshot().get("kernels", {})
            print(f"jitorch warmup: {name}: {out[name]:.1f} s (kernels so far: {k})",
                  flush=True)
    return out

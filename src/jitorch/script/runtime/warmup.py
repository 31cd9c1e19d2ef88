"""The generic kernel library, compiled ahead of time: `jitorch.jit.warmup()` and
`python -m jitorch.jit warmup`.

Kernels are named by what they compute (targets/cpu/kernel.py), so the kernels of the layers
every model is made of (Linear forward and backward, the activations, softmax and layernorm rows,
cross-entropy, conv/pool, an LSTM, attention, the optimizer steps) are the same kernels in
every model of the same dtypes and ranks. Warming compiles them once per machine by running
small instances of those layers through `jitorch.jit.script` (forward, backward and an
optimizer step each); later models find them in the disk cache and compile only what is theirs.
Sizes do not matter (kernels never depend on them, nor on values that only a model's sizes
fix: narrow's offsets are kernel parameters, attention's scale is computed from the run-time
head size), so the instances are tiny. What a workload adds is a pattern of fusion: a
mean-pooled classifier fuses the mean's backward into the last layer norm's, a written-out
LSTM cell fuses its gates unlike nn.LSTM. The workloads run in parallel processes (`jobs`),
each printing a progress line when it finishes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
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

    def transformer():
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    class Pooled(nn.Module):  # a sequence classifier: the mean over the sequence, a head
        def __init__(self):
            super().__init__()
            self.encoder, self.head = transformer(), nn.Linear(8, 4)

        def forward(self, x):
            return self.head(self.encoder(x).mean(1))

    def encoder():  # a head per position, and (its own kernels: the mean's reduction and the
        # last layer norm's backward fused with the mean's) a mean-pooled sequence classifier
        x = jitorch.randn(2, 3, 8)
        return [(Classifier(nn.Sequential(transformer(), nn.Linear(8, 4))), x,
                 jitorch.randint(0, 4, (2, 3))),
                # +6.5 CPU-s (63 -> 70 for `--only encoder`, load ~6); the encoder1/2 train
                # steps after warmup then compiled 0 kernels instead of 13
                (Classifier(Pooled()), x, jitorch.randint(0, 4, (2,)))]

    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 8, batch_first=True)
            self.out = nn.Linear(8, 4)

        def forward(self, x):
            return self.out(self.rnn(x)[0])

    class CellLoop(nn.Module):
        """The LSTM cell written out, over a time-first sequence (the tutorials' formula, as
        bench/_workloads.py's `lstm`): its fused gate kernels, forward and backward, are not
        nn.LSTM's. It returns the final state, whose sum, taken outside (as a caller's loss
        is), sends the backward its gradients: a loss inside fuses its expand into them."""

        def __init__(self):
            super().__init__()
            self.w_ih = nn.Parameter(jitorch.randn(8, 32) * 0.1)
            self.w_hh = nn.Parameter(jitorch.randn(8, 32) * 0.1)
            self.b = nn.Parameter(jitorch.zeros(32))

        def forward(self, x, h):
            c = h
            for t in range(x.size(0)):
                gates = x[t] @ self.w_ih + h @ self.w_hh + self.b
                i, f, g, o = gates.chunk(4, 1)
                i = jitorch.sigmoid(i)
                f = jitorch.sigmoid(f)
                g = jitorch.tanh(g)
                o = jitorch.sigmoid(o)
                c = f * c + i * g
                h = o * jitorch.tanh(c)
            return h, c

    def lstm():  # nn.LSTM: +6.8 CPU-s after the others; a new LSTM model's train step then
        # compiled in 2.5 CPU-s instead of 8.6 (1 kernel instead of 30; load ~4 on 2 cores)
        return [(Classifier(Recurrent()), jitorch.randn(2, 3, 8), jitorch.randint(0, 4, (2, 3))),
                # the cell: +15 CPU-s (58 -> 73 for `--only lstm`, load ~1); bench/
                # compile_time.py's lstm after warmup then compiled 0 kernels instead of 4
                (CellLoop(), jitorch.randn(3, 2, 8), jitorch.zeros(2, 8),
                 lambda hc: hc[0].sum() + hc[1].sum())]

    def classify(build):  # one model under a cross-entropy loss
        def instances():
            body, x, y = build()
            return [(Classifier(body), x, y)]
        return instances

    return [("mlp", classify(mlp)), ("cnn", classify(cnn)), ("encoder", encoder),
            ("lstm", lstm)]


def names() -> list:
    """The workloads' names, in the order they run."""
    return [name for name, _ in _workloads()]


def warm_one(name: str) -> dict:
    """Run workload `name` in this process, its programs compiled before it returns:
    {"seconds", "cpu_seconds", "kernels": this process's kernel counts}. A workload is a list
    of models `(model, x, y[, loss])`, `loss(model(x, y))` (default: the output) the loss:
    forward, backward and an SGD and an Adam step, twice each, for the first; forward and
    backward twice for the others (the optimizers' kernels are the first's)."""
    import jitorch
    from . import stats
    by_name = dict(_workloads())
    if name not in by_name:
        raise ValueError(f"unknown warmup workload {name!r} (one of {', '.join(by_name)})")
    t0, c0 = time.perf_counter(), time.process_time()
    # (a workload's models share one process: a kernel of the first is in memory for the next)
    for k, (module, x, y, *loss_of) in enumerate(by_name[name]()):
        model = jitorch.jit.script(module)
        optimizers = (lambda p: jitorch.optim.SGD(p, lr=0.01),
                      lambda p: jitorch.optim.Adam(p, lr=0.01)) if k == 0 else (None,)
        for make_opt in optimizers:
            opt = make_opt(model.parameters()) if make_opt else None
            for _ in range(2):  # (the second step takes the compiled path where there is one)
                if opt:
                    opt.zero_grad()
                out = model(x, y)
                (loss_of[0](out) if loss_of else out).backward()
                if opt:
                    opt.step()
        wait = getattr(jitorch.jit, "wait_compiled", None) or \
            getattr(model, "wait_compiled", None)
        if wait is not None:
            wait()
    return {"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "kernels": stats.snapshot().get("kernels", {})}


def warmup(verbose: bool = False, jobs: int | None = None, only=None) -> dict:
    """Compile the generic kernels into the disk cache: {workload: seconds}. Blocks until
    each workload's programs are compiled.

    `jobs` > 1 (default: the number of cores, at most one per workload) runs the workloads in
    that many processes at once, each compiling into the shared disk cache (a kernel two of
    them need is compiled by one and loaded by the other: kernels/cache.py); `jobs=1` runs them
    here, one after the other. `only`: a subset of `names()`. `verbose` prints one progress line
    per workload as it finishes."""
    todo = list(only) if only else names()
    for name in todo:
        if name not in names():
            raise ValueError(f"unknown warmup workload {name!r} (one of {', '.join(names())})")
    if jobs is None:
        jobs = min(len(todo), os.cpu_count() or 1)
    out = {}
    if jobs <= 1:
        for k, name in enumerate(todo, 1):
            r = warm_one(name)
            out[name] = r["seconds"]
            if verbose:
                _progress(k, len(todo), name, r)
        return out
    return _in_processes(todo, jobs, verbose)


def _progress(k: int, n: int, name: str, r: dict) -> None:
    kc = r.get("kernels", {})
    print(f"jitorch warmup [{k}/{n}] {name}: {r['seconds']:.1f} s ({r['cpu_seconds']:.1f} CPU-s),"
          f" kernels compiled {kc.get('compiled', 0)}, loaded {kc.get('disk', 0)}", flush=True)


def _in_processes(todo: list, jobs: int, verbose: bool) -> dict:
    """Each workload in a child `python -m jitorch.jit warmup --child NAME` (at most `jobs` at
    once), which prints its result as one JSON line."""
    out, running, waiting, done = {}, {}, list(todo), 0
    while waiting or running:
        while waiting and len(running) < jobs:
            name = waiting.pop(0)
            # each child compiles in its own process (sync): its CPU seconds and kernel counts
            # are the compile's, not a background worker's
            running[name] = subprocess.Popen(
                [sys.executable, "-m", "jitorch.jit", "warmup", "--child", name],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, JITORCH_COMPILE="sync"))
        name, proc = next(iter(running.items()))
        for nm, p in running.items():  # whichever finished first
            if p.poll() is not None:
                name, proc = nm, p
                break
        else:
            time.sleep(0.2)
            continue
        del running[name]
        stdout, stderr = proc.communicate()
        line = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not line:
            raise RuntimeError(f"jitorch warmup: workload {name} failed "
                               f"(exit {proc.returncode}):\n{stderr[-2000:]}")
        r = json.loads(line[-1])
        out[name] = r["seconds"]
        done += 1
        if verbose:
            _progress(done, len(todo), name, r)
    return out

"""The training step a PyTorch user writes, with default arguments: issue 10, step 7.

MLP 784-256-256-10 (nn.Sequential of Linear/ReLU), batch 32, float32, cross entropy:

    opt.zero_grad(); loss = model_with_loss(x, y); loss.backward(); opt.step()

with `optim.SGD(params)` and `optim.Adam(params)` at their defaults (lr 1e-3, no momentum /
betas (0.9, 0.999); no `fused=True`). Peers, interleaved in one process, one thread each, the
same initial weights:
- jitorch scripted: `jitorch.jit.script(WithLoss(model))` (forward and loss one program,
  backward by autodiff, one grad node on the tape) and the default optimizer;
- jitorch scripted + fused: the same with `fused=True` (the compiled step, for reference);
- PyTorch eager: the same source on torch.nn and torch.optim defaults, when installed;
- NumPy: the same step written by hand (forward, softmax cross entropy, backward, the update
  with PyTorch's single-tensor formulas, in place).
Every peer's loss after 1 and 2 steps is checked against PyTorch's (or NumPy's) within 1e-4.
Goal (issue 10): the scripted step at or ahead of PyTorch eager and NumPy at batch 32.

Then where the scripted step goes: zero_grad + forward (the program call and the grad node),
backward (the engine, the backward program, `.grad` accumulation) and `opt.step()`, each
timed alone (not with --quick). `--clock cpu` times by this process's CPU time instead of
wall time (for a loaded machine: see `timed_rows`).

    python bench/train_step_default.py [--quick] [--clock cpu]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _harness import pin_threads, print_table, short_error, try_import  # noqa: E402

pin_threads(1)

SIZES = (784, 256, 256, 10)
BATCH = 32
TOL = 1e-4
SCRIPTED, FUSED, TORCH, NUMPY = ("jitorch scripted", "jitorch scripted + fused",
                                 "PyTorch eager", "NumPy")
PEERS = [SCRIPTED, FUSED, TORCH, NUMPY]
OPTS = ("SGD", "Adam")


CLOCK = time.perf_counter  # --clock cpu: time.process_time


def timed_rows(fns: dict, notes: dict, rounds: int = 5, min_time: float = 0.2) -> dict:
    """Seconds per call of each callable (None: its note), interleaved rounds, best of all,
    on CLOCK: wall time, or this process's CPU time (with one BLAS thread and GIL-free
    programs running in the calling thread, a step's CPU time is its work; on a loaded
    machine it drifts less than wall time)."""
    live = {k: f for k, f in fns.items() if f is not None}
    reps = {}
    for k, f in live.items():  # calls per timing: at least min_time / 3 of wall time
        f()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < min_time / 3:
            f()
            n += 1
        reps[k] = max(n, 1)
    best = {k: float("inf") for k in live}
    for _ in range(rounds):
        for k, f in live.items():
            for _ in range(3):
                t0 = CLOCK()
                for _ in range(reps[k]):
                    f()
                best[k] = min(best[k], (CLOCK() - t0) / reps[k])
    return {k: best[k] if k in best else notes.get(k, "n/a")
            for k in list(fns) + [k for k in notes if k not in fns]}


def build_model(nn):
    layers = []
    for i in range(len(SIZES) - 1):
        layers.append(nn.Linear(SIZES[i], SIZES[i + 1]))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def numpy_state(model) -> list:
    return [np.array(p.detach().numpy(), copy=True) for p in model.parameters()]


def load_state(bk, model, state) -> None:
    with bk.no_grad():
        for p, a in zip(model.parameters(), state):
            p.copy_(bk.from_numpy(a.copy()))


def make_framework_step(bk, tm, state, x, y, opt_name, scripted=False, fused=False):
    """A step() -> loss closure on backend `bk` (jitorch or torch) with `bk.optim.<opt_name>`
    at its defaults; .fwd / .bwd / .opt_step are its parts, for the breakdown."""
    model = build_model(bk.nn)
    load_state(bk, model, state)
    kw = {"fused": True} if fused else {}
    opt = getattr(bk.optim, opt_name)(model.parameters(), **kw)
    f = tm.WithLoss(model)
    if scripted:
        f = bk.jit.script(f)
    xt, yt = bk.from_numpy(x.copy()), bk.from_numpy(y.copy())
    box = {}

    def fwd():
        opt.zero_grad()
        box["loss"] = loss = f(xt, yt)
        return loss

    def bwd():
        box["loss"].backward()

    def step():
        loss = fwd()
        loss.backward()
        opt.step()
        return loss
    step.fwd, step.bwd, step.opt_step, step.model = fwd, bwd, opt.step, model
    return step


class NumpyStep:
    """The same training step by hand in NumPy, float32, PyTorch's update formulas."""

    def __init__(self, state, x, y, opt_name):
        self.p = [a.copy() for a in state]  # W1, b1, W2, b2, W3, b3
        self.x, self.y, self.opt = x, y, opt_name
        self.g = [np.zeros_like(a) for a in self.p]
        self.m = [np.zeros_like(a) for a in self.p]
        self.v = [np.zeros_like(a) for a in self.p]
        self.t = 0
        self.onehot = np.zeros((len(y), SIZES[-1]), np.float32)
        self.onehot[np.arange(len(y)), y] = 1.0

    def __call__(self):
        p, x = self.p, self.x
        n = x.shape[0]
        h1 = x @ p[0].T + p[1]
        a1 = np.maximum(h1, 0)
        h2 = a1 @ p[2].T + p[3]
        a2 = np.maximum(h2, 0)
        z = a2 @ p[4].T + p[5]
        zmax = z.max(1, keepdims=True)
        e = np.exp(z - zmax)
        s = e.sum(1, keepdims=True)
        logp = z - zmax - np.log(s)
        loss = -logp[np.arange(n), self.y].mean()
        dz = (e / s - self.onehot) * np.float32(1.0 / n)
        g = self.g
        np.dot(dz.T, a2, out=g[4])
        g[5][...] = dz.sum(0)
        da2 = dz @ p[4]
        da2 *= h2 > 0
        np.dot(da2.T, a1, out=g[2])
        g[3][...] = da2.sum(0)
        da1 = da2 @ p[2]
        da1 *= h1 > 0
        np.dot(da1.T, x, out=g[0])
        g[1][...] = da1.sum(0)
        self.update()
        return loss

    def update(self):
        lr = np.float32(1e-3)
        if self.opt == "SGD":
            for p, g in zip(self.p, self.g):
                p -= lr * g
            return
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        step_size = 1e-3 / (1 - b1 ** self.t)
        bc2_sqrt = (1 - b2 ** self.t) ** 0.5
        for p, g, m, v in zip(self.p, self.g, self.m, self.v):
            m += (g - m) * np.float32(1 - b1)  # lerp
            v *= np.float32(b2)
            v += np.float32(1 - b2) * g * g
            denom = np.sqrt(v) / np.float32(bc2_sqrt) + np.float32(eps)
            p -= np.float32(step_size) * (m / denom)


def _scalar(loss) -> float:
    return float(loss.detach() if hasattr(loss, "detach") else loss)


def how_scripted_ran(jitorch) -> str:
    st = jitorch.jit.stats()
    reasons = dict(st.get("interpreted_reasons") or {})
    if reasons:
        return "interpreted: " + "; ".join(f"{k} ({v}x)" for k, v in reasons.items())
    return "forward+backward compiled"


def run(opt_name, rounds, min_time, breakdown):
    import jitorch
    torch = try_import("torch")
    import _train_models as tm_mod
    J = tm_mod.load(jitorch, "_tsd_models_jitorch")
    T = tm_mod.load(torch, "_tsd_models_torch") if torch is not None else None
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int64)
    jitorch.manual_seed(0)
    state = numpy_state(build_model(jitorch.nn))
    fns, notes, losses, how = {}, {}, {}, {}

    def warm(peer, make):
        t0 = time.perf_counter()
        try:
            s = make()
            losses[peer] = [_scalar(s()) for _ in range(3)]
        except Exception as e:  # noqa: BLE001
            notes[peer] = f"failed: {short_error(e, 60)}"
            return
        how[peer] = f"first three steps {time.perf_counter() - t0:.2f} s"
        fns[peer] = s

    jitorch.jit.reset_stats()
    warm(SCRIPTED, lambda: make_framework_step(jitorch, J, state, x, y, opt_name, True))
    how[SCRIPTED] = how.get(SCRIPTED, "") + "; " + how_scripted_ran(jitorch)
    warm(FUSED, lambda: make_framework_step(jitorch, J, state, x, y, opt_name, True, True))
    if T is not None:
        torch.manual_seed(0)
        warm(TORCH, lambda: make_framework_step(torch, T, state, x, y, opt_name))
    else:
        notes[TORCH] = "not installed"
    warm(NUMPY, lambda: NumpyStep(state, x, y, opt_name))
    ref = losses.get(TORCH) or losses.get(NUMPY)
    for peer, ls in losses.items():
        bad = [i for i in range(3) if abs(ls[i] - ref[i]) > TOL * max(1.0, abs(ref[i]))]
        if bad:
            fns.pop(peer, None)
            notes[peer] = f"wrong loss at step {bad[0]}: {ls[bad[0]]:.6f} vs {ref[bad[0]]:.6f}"
    row = timed_rows({p: fns.get(p) for p in PEERS}, notes, rounds=rounds, min_time=min_time)
    parts = None
    if breakdown and SCRIPTED in fns:
        parts = {}
        for peer in (SCRIPTED, FUSED, TORCH):
            s = fns.get(peer)
            if s is None:
                continue

            def fb(s=s):
                s.fwd()
                s.bwd()
            t = timed_rows({"fwd": s.fwd, "fwd+bwd": fb, "opt.step": s.opt_step}, {},
                           rounds=rounds, min_time=min_time)
            parts[peer] = {"zero_grad + forward": t["fwd"],
                           "backward": t["fwd+bwd"] - t["fwd"], "opt.step()": t["opt.step"]}
    return row, how, parts


def main(quick=False, clock="wall"):
    global CLOCK
    CLOCK = time.process_time if clock == "cpu" else time.perf_counter
    rounds, min_time = (2, 0.05) if quick else (5, 0.2)
    rows, hows, parts = [], [], []
    for opt_name in OPTS:
        row, how, split = run(opt_name, rounds, min_time, breakdown=not quick)
        label = f"MLP 784-256-256-10, batch {BATCH}, optim.{opt_name}() defaults"
        rows.append((label, row))
        hows += [f"- {opt_name}, {p}: {h}" for p, h in how.items()]
        if split:
            parts.append((opt_name, split))
    print_table("Training step with default arguments (issue 10, step 7), float32", "step",
                PEERS, rows, base=SCRIPTED,
                unit="us per step" + (" of CPU time" if clock == "cpu" else " (wall)"))
    print(f"(x) here: peer time / `{SCRIPTED}` time. Losses after 1-3 steps match within "
          f"{TOL:g}.\n")
    print("\n".join(hows) + "\n")
    if parts:
        print("Where the step goes (each part timed alone; backward = (forward + backward) - "
              f"forward), us ({clock}):\n")
        cols = ["zero_grad + forward", "backward", "opt.step()"]
        print("| optimizer | peer | " + " | ".join(cols) + " |")
        print("|---|---|" + "---|" * len(cols))
        for opt_name, split in parts:
            for peer, t in split.items():
                print(f"| {opt_name} | {peer} | "
                      + " | ".join(f"{t[c] * 1e6:.0f}" for c in cols) + " |")
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, no breakdown")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time steps by wall clock or by this process's CPU time")
    a = ap.parse_args()
    main(a.quick, a.clock)

"""Train an MLP classifier on three interleaved spirals with a scripted (compiled) forward/backward.

The data set is generated here, deterministically (no download, no scikit-learn): three arms of
a spiral in the plane with a little Gaussian noise, 2 features -> 3 classes, split 80/20 into
train and test. The model is `nn.Sequential` of `nn.Linear` layers and a small ReLU module,
trained with a `DataLoader`, `optim.Adam` and cross entropy; one progress line per epoch (loss,
train and test accuracy). At the end the test accuracy is checked against the stated goal
(> 95% at the default size), the `state_dict` is saved with `jitorch.save`, loaded back into a
fresh model and the reloaded model is checked to predict the same.

By default the network runs through one `@jitorch.script` program (forward and, through
autodiff, backward compiled to GIL-free Numba code) with the weights passed as arguments, so
optimizer steps never recompile; the run ends with what the JIT did (`jitorch.jit.stats()`:
programs compiled or loaded from the disk cache, the calls by the tier that ran them, anything
interpreted). Numba compiles in a background worker while the first step runs interpreted; the
training waits for it after the first step (`jitorch.jit.wait_compiled()`), and the step time
it prints is of the steps after the first (for both modes), so it times the compiled programs.
`--eager` trains the same `nn.Sequential` eagerly; `--compare` times both. `--device cuda`
trains on CUDA (a GPU, or the simulator with `JITORCH_CUDA_SIM=1`): the model is moved there
with `.to(device)` and each batch as it is drawn; scripted code on CUDA runs through the IR
interpreter until the CUDA target compiles it, and the JIT report says so. When the
`tensorboard` package is installed, the loss and accuracies of each epoch are also logged with
`jitorch.utils.tensorboard.SummaryWriter` (to `--logdir`, else a fresh temporary directory; the
run prints where: `tensorboard --logdir <dir>` shows them).

    python examples/train_mlp.py [--epochs 40] [--points 3000] [--eager] [--compare] [--logdir D]
                                 [--device cpu|cuda]
"""
import argparse
import math
import os
import tempfile
import time

import numpy as np

import jitorch
import jitorch.nn.functional as F
from jitorch import nn, optim
from jitorch.utils.data import DataLoader, TensorDataset

GOAL = 0.95  # test accuracy the default run reaches (and checks)


def spirals(n: int, classes: int = 3, noise: float = 0.05, seed: int = 0):
    """`n` points on `classes` interleaved spiral arms: (x float32 (n, 2), y int64 (n,))."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    r = rng.uniform(0.05, 1.0, n)
    theta = 1.5 * math.pi * r + 2 * math.pi * y / classes
    x = np.stack([r * np.cos(theta), r * np.sin(theta)], 1) + noise * rng.standard_normal((n, 2))
    perm = rng.permutation(n)
    return (jitorch.from_numpy(x[perm].astype(np.float32)),
            jitorch.from_numpy(y[perm].astype(np.int64)))


class ReLU(nn.Module):
    def forward(self, x):
        return F.relu(x)


def make_model(hidden: int = 64) -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, hidden), ReLU(), nn.Linear(hidden, hidden), ReLU(),
                         nn.Linear(hidden, 3))


@jitorch.script
def mlp_forward(x, w1, b1, w2, b2, w3, b3):
    h = jitorch.relu(x @ w1.t() + b1)
    h = jitorch.relu(h @ w2.t() + b2)
    return h @ w3.t() + b3


def _weights(model):
    return (model[0].weight, model[0].bias, model[2].weight, model[2].bias,
            model[4].weight, model[4].bias)


def forward(model, x, scripted: bool):
    if scripted:
        return mlp_forward(x, *_weights(model))
    return model(x)


def accuracy(model, x, y, scripted=False) -> float:
    with jitorch.no_grad():
        return (forward(model, x, scripted).argmax(1) == y).float().mean().item()


def summary_writer(logdir=None):
    """A SummaryWriter when tensorboard is installed (else None: the run is the same)."""
    try:
        from jitorch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(logdir or tempfile.mkdtemp(prefix="train_mlp_tb_"))


def _sync(device) -> None:
    """Wait for the device's queued work, so timers read finished work (CUDA is asynchronous)."""
    if jitorch.device(device).type == "cuda":
        jitorch.cuda.synchronize()


def train(model, x, y, epochs, batch_size, lr, scripted, log=print, writer=None, device="cpu"):
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True,
                        generator=jitorch.Generator().manual_seed(0))
    opt = optim.Adam(model.parameters(), lr=lr)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    steps, step_time = 0, 0.0  # (of the steps after the first)
    for epoch in range(epochs):
        total, n = 0.0, 0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            _sync(device)
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = F.cross_entropy(forward(model, xb, scripted), yb)
            loss.backward()
            opt.step()
            _sync(device)
            if steps:
                step_time += time.perf_counter() - t0
            elif scripted:
                jitorch.jit.wait_compiled()  # the first step started every compile
            steps += 1
            total += loss.item() * len(yb)
            n += len(yb)
        sched.step()
        acc = accuracy(model, x.to(device), y.to(device), scripted)
        log(f"epoch {epoch + 1:3d}/{epochs}  loss {total / n:.4f}  train acc {acc:.3f}")
        if writer is not None:
            writer.add_scalar("loss/train", total / n, epoch + 1)
            writer.add_scalar("accuracy/train", acc, epoch + 1)
    return step_time / max(steps - 1, 1)


def main(epochs: int = 40, points: int = 3000, batch_size: int = 64, hidden: int = 64,
         lr: float = 0.01, scripted: bool = True, goal: float = GOAL,
         logdir: str | None = None, device: str = "cpu") -> float:
    jitorch.manual_seed(0)
    x, y = spirals(points)
    split = points * 4 // 5
    xtr, ytr = x[:split], y[:split]  # batches move to the device as they are drawn
    xte, yte = x[split:].to(device), y[split:].to(device)
    model = make_model(hidden).to(device)
    mode = "scripted" if scripted else "eager"
    print(f"three spirals: {split} train / {points - split} test points; MLP 2-{hidden}-"
          f"{hidden}-3, Adam lr {lr}, batch {batch_size}, {mode} forward/backward on "
          f"{xte.device}")
    writer = summary_writer(logdir)
    step = train(model, xtr, ytr, epochs, batch_size, lr, scripted, writer=writer,
                 device=device)
    acc = accuracy(model, xte, yte, scripted)
    if writer is not None:
        writer.add_scalar("accuracy/test", acc, epochs)
        writer.close()
        print(f"TensorBoard log: {writer.get_logdir()} (tensorboard --logdir "
              f"{writer.get_logdir()})")
    print(f"train step ({mode}): {step * 1e3:.3f} ms on {xte.device}")
    if scripted:
        st = jitorch.jit.stats()
        if xte.device.type == "cpu":
            print(f"JIT: {st.numba_compiles} programs compiled here, {st.disk_hits} loaded from "
                  f"the disk cache ({st.background_done} of them compiled by the background "
                  f"worker), {st.kernels['compiled']} kernels compiled, {st.kernels['disk']} "
                  f"loaded, {st.kernels['shared']} shared; {st.calls_by_tier()}"
                  + (f"; interpreted for a reason: {st.interpreted_reasons}"
                     if st.interpreted_reasons else ""))
        else:  # the counters above mix targets: report what this function's programs are
            print(f"JIT: {st.calls} scripted calls, {st.interpreted_runs} of them run by the IR "
                  f"interpreter")
        fs = st.functions.get("mlp_forward")
        if fs is not None:
            print(f"mlp_forward on {xte.device}: {fs['tier']} ({fs['programs']} programs, "
                  f"{fs['programs_interpreted']} interpreted, {fs['programs_compiling']} "
                  f"compiling)" + "".join(f"; {r}" for r in fs["reasons"]))
        print(mlp_forward.graph_for(xte[:2], *_weights(model)))
    print(f"test accuracy {acc:.3f} (goal > {goal:.2f}): {'OK' if acc > goal else 'MISSED'}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.pt")
        jitorch.save(model.state_dict(), path)
        fresh = make_model(hidden).to(device)
        fresh.load_state_dict(jitorch.load(path))
        same = bool((fresh(xte).argmax(1) == model(xte).argmax(1)).all().item())
        print(f"saved state_dict ({os.path.getsize(path)} bytes), reloaded: "
              f"{'same predictions' if same else 'DIFFERENT predictions'}")
    if not same:
        raise RuntimeError("the reloaded model predicts differently")
    return acc


def compare(epochs: int = 3, points: int = 3000, batch_size: int = 64, hidden: int = 64):
    """Step time, eager vs scripted, same data and sizes (interleaved epochs)."""
    x, y = spirals(points)
    times = {True: [], False: []}
    for _ in range(epochs):
        for scripted in (False, True):
            jitorch.manual_seed(0)
            m = make_model(hidden)
            times[scripted].append(train(m, x, y, 1, batch_size, 0.01, scripted,
                                         log=lambda s: None))
    e, s = min(times[False]), min(times[True])
    print(f"MLP train step, batch {batch_size}, hidden {hidden}: eager {e * 1e3:.3f} ms, "
          f"scripted {s * 1e3:.3f} ms ({e / s:.2f}x)")
    return e, s


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--points", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--eager", action="store_true", help="eager nn.Sequential, no JIT")
    ap.add_argument("--compare", action="store_true", help="time eager vs scripted steps")
    ap.add_argument("--logdir", default=None, help="TensorBoard log directory")
    ap.add_argument("--device", default="cpu", help="where to train: cpu (default) or cuda")
    a = ap.parse_args()
    if a.compare:
        compare(batch_size=a.batch_size, hidden=a.hidden)
    else:
        acc = main(a.epochs, a.points, a.batch_size, a.hidden, scripted=not a.eager,
                   logdir=a.logdir, device=a.device)
        raise SystemExit(0 if acc > GOAL else 1)

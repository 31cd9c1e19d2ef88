"""Train step (forward + backward + Adam step), float32: MLP, small CNN, char LSTM, Transformer.

Models (bench/_train_models.py, one source for both backends): MLP 784-256-128-10 at batch 64;
CNN Conv(1,8)-ReLU-Pool-Conv(8,16)-ReLU-Pool-Flatten-Linear(784,10) at batch 32 on 28x28;
the character LSTM of examples/train_char_lstm.py (seq 32, batch 16, hidden 64) and the same
sizes over nn.LSTM; a 2-layer nn.TransformerEncoder (d_model 64, nhead 4, ff 128, dropout 0,
batch_first; seq 16, batch 8) with a mean-pool and a Linear head. Loss: cross entropy.

Peers, interleaved in one process, one thread each, every model starting from the same weights
(state_dicts copied through NumPy):
- jitorch scripted: `jitorch.jit.script(WithLoss(model))` (forward and loss in one program,
  backward by autodiff) and the default `optim.Adam` step (compiled since issue 10, step 7);
  for the example's CharLSTM its own scripted time loop (`forward(scripted=True)`);
- jitorch scripted + fused Adam: the same with `optim.Adam(..., fused=True)` (compiled step);
- jitorch eager: the same modules run op by op;
- PyTorch eager: the same source on torch.nn, `torch.optim.Adam` default, when installed.
Before timing, each peer's loss after its first step is checked against PyTorch's (1e-4). Each
scripted peer says whether its forward and backward ran compiled or through the interpreter
(`jitorch.jit.stats()['interpreted_reasons']`). Goal (issue 4): the scripted train step faster
than PyTorch eager on all four models.

Then two breakdown tables (not with --quick): forward+backward alone and the Adam step alone.

    python bench/train_step.py [--quick] [--no-breakdown] [--only mlp cnn char_lstm lstm encoder]
"""
from __future__ import annotations

import argparse
import copy
import time

import numpy as np

import _train_models as tm
from _harness import pin_threads, print_table, short_error, timed_rows, try_import

pin_threads(1)

SCRIPTED, FUSED, EAGER, TORCH = ("jitorch scripted", "jitorch scripted + fused Adam",
                                 "jitorch eager", "PyTorch eager")
PEERS = [SCRIPTED, FUSED, EAGER, TORCH]
TOL = 1e-4  # |loss after one step - PyTorch's| <= TOL * max(1, |PyTorch's|)


class Case:
    """One model: how to build it on a backend module (bench/_train_models.py loaded for that
    backend), its batch as NumPy, and how a peer computes the loss."""

    def __init__(self, label, build, x, y, kind="module"):
        self.label, self.build, self.x, self.y, self.kind = label, build, x, y, kind


def cases(rng) -> dict:
    vocab, cx, cy = tm.char_data(seq=32, batch=16)

    def char_build(mod):
        if mod.torch.__name__ == "jitorch":  # the example's own class (issue 4 names it)
            return tm.char_example().CharLSTM(vocab, hidden=64)
        return mod.CharLSTMTwin(vocab, hidden=64)

    def ints(n, k=10):
        return rng.integers(0, k, n).astype(np.int64)

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    return {
        "mlp": Case("MLP 784-256-128-10, batch 64", lambda m: m.mlp(), normal(64, 784), ints(64)),
        "cnn": Case("CNN 2 conv + linear, 1x28x28, batch 32", lambda m: m.cnn(),
                    normal(32, 1, 28, 28), ints(32)),
        "char_lstm": Case("char LSTM (example's loop), T 32, B 16, H 64", char_build, cx, cy,
                          kind="char"),
        "lstm": Case("nn.LSTM char LM, T 32, B 16, H 64", lambda m: m.LSTMLM(vocab, 16, 64),
                     cx, cy),
        "encoder": Case("Transformer encoder 2x(d 64, h 4, ff 128), T 16, B 8",
                        lambda m: m.EncoderClassifier(), normal(8, 16, 64), ints(8)),
    }


def loss_fn(mod, case, model, scripted: bool):
    """-> f(x, y) computing the loss on backend `mod` (the wrapper is scripted if asked)."""
    F = mod.F
    if case.kind == "char":
        def char_loss(x, y):
            logits, _ = model(x, scripted=scripted)
            return F.cross_entropy(logits.reshape(-1, logits.size(2)), y.reshape(-1))
        return char_loss
    wrapped = mod.WithLoss(model)
    return mod.torch.jit.script(wrapped) if scripted else wrapped


def make_step(mod, case, state, scripted=False, fused=False):
    """A fresh model from `state`, its optimizer and a step() -> loss tensor closure."""
    bk = mod.torch
    model = case.build(mod)
    mod.load_numpy_state(model, state)
    kw = {"fused": True} if fused else {}
    opt = bk.optim.Adam(model.parameters(), lr=1e-3, **kw)
    f = loss_fn(mod, case, model, scripted)
    x, y = bk.from_numpy(case.x.copy()), bk.from_numpy(case.y.copy())

    def fwd_bwd():
        opt.zero_grad()
        loss = f(x, y)
        loss.backward()
        return loss

    def step():
        loss = fwd_bwd()
        opt.step()
        return loss
    step.opt, step.fwd_bwd = opt, fwd_bwd  # for the breakdown tables
    return step


def adam_how(opt, fallbacks_before: dict) -> str:
    """How one more `opt.step()` runs: compiled program calls (counted by jit.stats), calls
    that the interpreter runs, or the eager functional form (CompiledStep's fallback reasons)."""
    import jitorch
    jitorch.jit.reset_stats()
    opt.step()
    st = jitorch.jit.stats()
    calls, interp = st.get("calls", 0), st.get("interpreted_runs", 0)
    fell = type(opt)._fn.fallbacks
    new = [str(v) for k, v in fell.items() if fallbacks_before.get(k) != v]
    if calls and not interp and not new:
        return f"Adam step compiled ({calls} program call(s) per step)"
    parts = [f"Adam step: {calls - interp} compiled and {interp} interpreted program call(s) "
             "per step"]
    if new or not calls:
        parts.append("eager functional form for the rest: "
                     + ("; ".join(new or map(str, fell.values())) or "no reason recorded"))
    return ", ".join(parts)


def how_it_ran(reasons: dict) -> str:
    """'forward+backward compiled' or which parts the interpreter ran, and why."""
    if not reasons:
        return "forward+backward compiled"
    parts = []
    for r in reasons:
        if r.startswith("autodiff: "):
            parts.append(f"forward+backward interpreted ({r[len('autodiff: '):]})")
        elif r.startswith("autodiff forward interpreted"):
            parts.append(f"forward interpreted ({r.split(': ', 1)[-1]})")
        elif r.startswith("backward: "):
            parts.append(f"backward interpreted ({r[len('backward: '):]})")
        else:
            parts.append(f"interpreted ({r})")
    return "; ".join(parts)


def run_case(jitorch, J, T, case, peers, rounds, min_time, breakdown_too=False):
    """-> (timings row, notes on how each scripted peer ran, breakdown rows or None)."""
    jitorch.manual_seed(0)
    state = tm.to_numpy_state(case.build(J))
    fns, notes, how = {}, {}, {}

    def warm(peer, make):
        """Builds the step, runs it twice (compiles; the 2nd loss is after one step)."""
        adam_before = copy.deepcopy(jitorch.optim.Adam._fn.fallbacks)
        jitorch.jit.reset_stats()
        t0 = time.perf_counter()
        try:
            step = make()
            losses = [float(step().item()) for _ in range(2)]
        except Exception as e:  # noqa: BLE001  (a peer that fails is a note in its cell)
            notes[peer] = f"failed: {short_error(e, 70)}"
            return None
        # first two steps: compiles, or loads from the memory/disk caches
        first = f" (first two steps: {time.perf_counter() - t0:.1f} s)"
        if peer == SCRIPTED:
            how[peer] = how_it_ran(dict(jitorch.jit.stats().get("interpreted_reasons")
                                        or {})) + first
        elif peer == FUSED:  # the model runs as in SCRIPTED: say how the Adam step ran
            how[peer] = "model as above; " + adam_how(step.opt, adam_before) + first
        fns[peer] = step
        return losses

    ref = None
    if TORCH in peers:
        if T is None:
            notes[TORCH] = "not installed"
        else:
            T.torch.manual_seed(0)
            ref = warm(TORCH, lambda: make_step(T, case, state))
    builders = {SCRIPTED: dict(scripted=True), FUSED: dict(scripted=True, fused=True),
                EAGER: {}}
    for peer, kw in builders.items():
        if peer not in peers:
            continue
        losses = warm(peer, lambda kw=kw: make_step(J, case, state, **kw))
        if losses is None or ref is None:
            continue
        bad = [i for i in range(2) if abs(losses[i] - ref[i]) > TOL * max(1.0, abs(ref[i]))]
        if bad:
            fns[peer] = None
            notes[peer] = (f"wrong loss after {bad[0]} step(s): {losses[bad[0]]:.6f} vs "
                           f"PyTorch {ref[bad[0]]:.6f}")
    fns = {p: fns.get(p) for p in peers}
    row = safe_timed_rows(fns, notes, rounds, min_time)
    parts = breakdown(fns, notes, rounds, min_time) if breakdown_too else None
    return row, how, parts


BWD_PEERS = [SCRIPTED, EAGER, TORCH]
ADAM_PEERS = ["jitorch fused Adam", "jitorch Adam (default)", "PyTorch Adam (default)"]


def breakdown(steps, notes, rounds, min_time):
    """-> (forward+backward row, Adam step row): the parts of a train step, timed apart from
    the same peers' models (the Adam steps reuse the gradients the last backward left)."""
    fb = {p: steps[p].fwd_bwd if steps.get(p) else None for p in BWD_PEERS}
    fb_row = safe_timed_rows(fb, {p: notes[p] for p in BWD_PEERS if p in notes}, rounds,
                             min_time)
    # the default Adam of the eager peer's model: the same step as SCRIPTED's, and
    # there even when the model does not script
    src = dict(zip(ADAM_PEERS, (FUSED, EAGER if steps.get(EAGER) else SCRIPTED, TORCH)))
    adam = {a: steps[p].opt.step if steps.get(p) else None for a, p in src.items()}
    adam_notes = {a: notes[p] for a, p in src.items() if p in notes}
    return fb_row, safe_timed_rows(adam, adam_notes, rounds, min_time)


def safe_timed_rows(fns, notes, rounds, min_time):
    """timed_rows, except that a peer raising during the timing loop (after its checked first
    steps) becomes a note in its cell instead of ending the benchmark."""
    try:
        return timed_rows(fns, notes, rounds=rounds, min_time=min_time)
    except Exception:  # noqa: BLE001  (find the failing peer: time them one by one)
        out = {}
        for p, f in fns.items():
            try:
                out.update(timed_rows({p: f}, {}, rounds=rounds, min_time=min_time))
            except Exception as e:  # noqa: BLE001
                out[p] = f"failed while timed: {short_error(e, 60)}"
        return {p: out.get(p, notes.get(p, "n/a")) if fns.get(p) else notes.get(p, "n/a")
                for p in list(fns) + [k for k in notes if k not in fns]}


def main(only=None, rounds=5, min_time=0.2, parts=True):
    import jitorch
    torch = try_import("torch")
    J = tm.load(jitorch, "_train_models_jitorch")
    T = tm.load(torch, "_train_models_torch") if torch is not None else None
    rng = np.random.default_rng(0)
    all_cases = cases(rng)
    rows, hows, fb_rows, adam_rows = [], [], [], []
    for key in only or list(all_cases):
        case = all_cases[key]
        row, how, split = run_case(jitorch, J, T, case, PEERS, rounds, min_time, parts)
        rows.append((case.label, row))
        hows += [f"- {case.label}, {peer}: {h}" for peer, h in how.items()]
        if split:
            fb_rows.append((case.label, split[0]))
            adam_rows.append((case.label, split[1]))
    print_table("Train step (forward + backward + Adam), float32", "model", PEERS, rows,
                base=SCRIPTED, unit="us per step")
    checked = (f"Every timed peer's loss after one step matched PyTorch's within {TOL:g}."
               if T is not None else "PyTorch is not installed: losses were not cross-checked.")
    print(f"(x) here: peer time / `{SCRIPTED}` time. {checked}\n")
    print("How the scripted peers ran (from `jitorch.jit.stats()` after their first two "
          "steps):\n")
    print("\n".join(hows) + "\n")
    if fb_rows:
        print_table("Where the step goes: forward + backward alone (zero_grad, loss, "
                    "backward)", "model", BWD_PEERS, fb_rows, base=SCRIPTED, unit="us per call")
        print_table("Where the step goes: the Adam step alone (same models' parameters and "
                    "gradients)", "model", ADAM_PEERS, adam_rows, base=ADAM_PEERS[0],
                    unit="us per step")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, shorter timings")
    ap.add_argument("--only", nargs="+", choices=["mlp", "cnn", "char_lstm", "lstm", "encoder"])
    ap.add_argument("--no-breakdown", action="store_true",
                    help="skip the forward+backward and Adam-step tables (--quick skips them)")
    a = ap.parse_args()
    main(a.only, rounds=1 if a.quick else 5, min_time=0.05 if a.quick else 0.2,
         parts=not a.quick and not a.no_breakdown)

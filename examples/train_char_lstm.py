"""A character-level LSTM language model trained on `examples/data/tiny.txt` (the Gettysburg
Address, public domain), with the LSTM's time loop inside `@jitorch.script`.

The cell is written here: two `nn.Linear` layers (input->4H, hidden->4H) whose weights are passed
as arguments to `lstm_seq`, a scripted function holding the loop over time steps, so Python runs
once per sequence and optimizer steps never recompile. An embedding table (an `nn.Parameter`)
feeds it and an `nn.Linear` head predicts the next character; cross entropy, `optim.Adam`.
Prints the loss per epoch (it falls) and a greedy-ish sample at the end; `--eager` runs the same
loop uncompiled, `--compare` times a train step both ways. Under autodiff the compiler runs the
forward loop as one Numba program that also saves what the backward needs, and `loss.backward()`
runs a compiled backward loop over the time steps in reverse (the grad of `hs[t] = h` is row t of
the incoming grad; the grads of the weights accumulate inside the program). `nn.LSTM` scripted
with `jitorch.jit.script(nn.LSTM(...))` compiles the same way. Numba compiles in a background
worker while the first step runs interpreted: the training waits for it after the first step
(`jitorch.jit.wait_compiled()`), times the steps after the first, and ends with which tier ran
the scripted calls (`jitorch.jit.stats()`).

    python examples/train_char_lstm.py [--epochs 15] [--hidden 64] [--seq 32] [--eager]
"""
import argparse
import pathlib
import time

import numpy as np

import jitorch
import jitorch.nn.functional as F
from jitorch import nn, optim

TEXT = pathlib.Path(__file__).resolve().parent / "data" / "tiny.txt"


def lstm_seq_eager(x, w_ih, b_ih, w_hh, b_hh, h, c):
    """x: (T, B, E); weights as nn.Linear stores them ((4H, E), (4H, H)); h, c: (B, H).
    Returns the hidden states of every step (T, B, H) and the final (h, c)."""
    hs = jitorch.zeros(x.size(0), h.size(0), h.size(1))
    for t in range(x.size(0)):
        gates = x[t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
        i, f, g, o = gates.chunk(4, 1)
        c = jitorch.sigmoid(f) * c + jitorch.sigmoid(i) * jitorch.tanh(g)
        h = jitorch.sigmoid(o) * jitorch.tanh(c)
        hs[t] = h  # an index write: compiled inside the script, also under autodiff
    return hs, h, c


# the same source compiled (what `@jitorch.script` on the def would do)
lstm_seq = jitorch.script(lstm_seq_eager)


class CharLSTM(nn.Module):
    def __init__(self, vocab: int, embed: int = 16, hidden: int = 64):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Parameter(0.1 * jitorch.randn(vocab, embed))
        self.ih = nn.Linear(embed, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None, scripted: bool = True):
        """idx: (T, B) int64 -> logits (T, B, vocab), (h, c)."""
        b = idx.size(1)
        if state is None:
            state = (jitorch.zeros(b, self.hidden), jitorch.zeros(b, self.hidden))
        seq = lstm_seq if scripted else lstm_seq_eager
        hs, h, c = seq(self.embed[idx], self.ih.weight, self.ih.bias, self.hh.weight,
                       self.hh.bias, *state)
        return self.head(hs), (h, c)


def load_text():
    text = TEXT.read_text()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    return text, chars, np.array([stoi[ch] for ch in text], dtype=np.int64)


def batches(data, seq: int, batch: int, rng):
    """Random windows: inputs (T, B) and next-character targets (T, B)."""
    starts = rng.integers(0, len(data) - seq - 1, batch)
    win = np.stack([data[s:s + seq + 1] for s in starts], 1)
    return jitorch.from_numpy(win[:-1].copy()), jitorch.from_numpy(win[1:].copy())


def train_step(model, opt, x, y, scripted):
    opt.zero_grad()
    logits, _ = model(x, scripted=scripted)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(2)), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss.item()


def sample(model, chars, stoi, prompt: str, n: int, temperature: float = 0.5, seed: int = 0):
    gen = jitorch.Generator().manual_seed(seed)
    out = list(prompt)
    with jitorch.no_grad():
        idx = jitorch.tensor([[stoi[ch]] for ch in prompt])
        logits, state = model(idx)
        for _ in range(n):
            probs = (logits[-1, 0] / temperature).softmax(0)
            nxt = jitorch.multinomial(probs, 1, generator=gen).item()
            out.append(chars[nxt])
            logits, state = model(jitorch.tensor([[nxt]]), state)
    return "".join(out)


def main(epochs: int = 15, steps: int = 20, hidden: int = 64, seq: int = 32, batch: int = 16,
         lr: float = 0.01, scripted: bool = True, sample_len: int = 120):
    jitorch.manual_seed(0)
    rng = np.random.default_rng(0)
    text, chars, data = load_text()
    stoi = {ch: i for i, ch in enumerate(chars)}
    model = CharLSTM(len(chars), hidden=hidden)
    opt = optim.Adam(model.parameters(), lr=lr)
    mode = "scripted" if scripted else "eager"
    print(f"{TEXT.name}: {len(text)} characters, vocabulary {len(chars)}; LSTM hidden {hidden}, "
          f"sequences of {seq}, batch {batch}, {mode} time loop")
    losses, step_time, n = [], 0.0, 0
    for epoch in range(epochs):
        total = 0.0
        for _ in range(steps):
            x, y = batches(data, seq, batch, rng)
            t0 = time.perf_counter()
            total += train_step(model, opt, x, y, scripted)
            if n:  # (the first step: the compiles start, timed apart)
                step_time += time.perf_counter() - t0
            elif scripted:
                jitorch.jit.wait_compiled()
            n += 1
        losses.append(total / steps)
        print(f"epoch {epoch + 1:3d}/{epochs}  loss {losses[-1]:.4f}")
    print(f"train step ({mode}): {step_time / max(n - 1, 1) * 1e3:.3f} ms")
    print("sample:", repr(sample(model, chars, stoi, "Four score", sample_len)))
    if scripted:
        print(jitorch.jit.stats().calls_by_tier())
    return losses


def compare(reps: int = 10, hidden: int = 64, seq: int = 32, batch: int = 16):
    """Train-step time, eager loop vs scripted loop, interleaved on the same batches."""
    jitorch.manual_seed(0)
    rng = np.random.default_rng(0)
    _, chars, data = load_text()
    model = CharLSTM(len(chars), hidden=hidden)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = batches(data, seq, batch, rng)
    for scripted in (True, False):  # warm up (compiles)
        train_step(model, opt, x, y, scripted)
    jitorch.jit.wait_compiled()  # time the compiled programs, not the interpreter
    times = {True: [], False: []}
    for _ in range(reps):
        for scripted in (False, True):
            t0 = time.perf_counter()
            train_step(model, opt, x, y, scripted)
            times[scripted].append(time.perf_counter() - t0)
    e, s = min(times[False]), min(times[True])
    print(f"char LSTM train step, T {seq}, batch {batch}, hidden {hidden}: eager {e * 1e3:.3f} ms"
          f", scripted {s * 1e3:.3f} ms ({e / s:.2f}x)")
    return e, s


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--steps", type=int, default=20, help="train steps per epoch")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--eager", action="store_true", help="run the time loop uncompiled")
    ap.add_argument("--compare", action="store_true", help="time eager vs scripted steps")
    a = ap.parse_args()
    if a.compare:
        compare(hidden=a.hidden, seq=a.seq, batch=a.batch)
    else:
        main(a.epochs, a.steps, a.hidden, a.seq, a.batch, scripted=not a.eager)

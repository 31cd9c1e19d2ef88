"""A small Transformer encoder: trained scripted, saved with `jitorch.jit.save`, then served by a
separate process that loads the archive with `jitorch.jit.load` (no model source needed there).

Task (generated here, deterministic): a sequence of `--seq` tokens drawn from 0..9; the label is
1 when odd tokens outnumber even ones (a counting task: every position must be read, which the
mean-pooled encoder output does). Model: `nn.Embedding` + a learned position table +
`nn.TransformerEncoder` (`--layers` x `nn.TransformerEncoderLayer`, batch_first) + mean over
positions + `nn.Linear` head; cross entropy, `optim.AdamW`.

1. `jitorch.jit.script(model)` compiles the forward; `loss.backward()` runs the compiled
   backward (the first step compiles both, later steps reuse them: parameters are program
   arguments). Numba compiles in a background worker while the first step runs interpreted;
   the training waits for it after the first step (`jitorch.jit.wait_compiled()`), so the
   steps it times are compiled, and says which tier ran the calls (`jitorch.jit.stats()`; a
   second run loads every program from the disk cache). One progress line per epoch; the test
   accuracy is checked against `--goal`.
2. `jitorch.jit.save(scripted.eval() ...)` writes one archive (IR text + JSON + tensors, no
   pickle: docs/serialization.md).
3. `python examples/transformer_encoder.py --serve model.jtz` is started as a subprocess: it
   loads the archive and answers one JSON request per stdin line (`{"tokens": [...]}` ->
   `{"label": k, "p": [...]}`) with the compiled program, batch 1, no gradient (it waits for the
   compile after its first request). The parent sends the test set, checks every served answer
   equals its own in-process prediction and prints the served accuracy, the server's median
   latency and which tier ran its calls.

    python examples/transformer_encoder.py [--epochs 4] [--layers 2] [--d-model 32] [--eager]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import jitorch
import jitorch.nn.functional as F
from jitorch import nn, optim

VOCAB = 10


def make_data(n: int, seq: int, seed: int):
    """(tokens int64 (n, seq), labels int64 (n,)): 1 when odd tokens outnumber even ones."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, size=(n, seq))
    labels = ((tokens % 2).sum(1) * 2 > seq).astype(np.int64)
    return jitorch.from_numpy(tokens.astype(np.int64)), jitorch.from_numpy(labels)


class Classifier(nn.Module):
    def __init__(self, seq: int, d_model: int = 32, nhead: int = 4, layers: int = 2,
                 ff: int = 64):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Parameter(0.02 * jitorch.randn(seq, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens) + self.pos)
        return self.head(h.mean(1))


def train(model, run, x, y, epochs, batch, lr, log=print):
    """`run` is the scripted module (or the eager one): it shares `model`'s parameters. ->
    the time of each step (after the first, the compiled programs': see the module doc)."""
    opt = optim.AdamW(model.parameters(), lr=lr)
    gen = jitorch.Generator().manual_seed(0)
    step_times = []
    for epoch in range(epochs):
        perm = jitorch.randperm(x.shape[0], generator=gen)
        total = 0.0
        for i in range(0, x.shape[0] - batch + 1, batch):
            idx = perm[i:i + batch]
            t0 = time.perf_counter()
            loss = F.cross_entropy(run(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - t0)
            if len(step_times) == 1 and run is not model:
                t1 = time.perf_counter()
                jitorch.jit.wait_compiled()  # the first step started every compile
                log(f"waited {time.perf_counter() - t1:.1f} s for the compiled programs")
            total += loss.item()
        log(f"epoch {epoch + 1:2d}  loss {total / (x.shape[0] // batch):.4f}")
    return step_times


def predict(run, x):
    with jitorch.no_grad():
        return run(x).softmax(-1)


def serve(path: str) -> None:
    """The server process: load the archive, answer one JSON line per request."""
    model = jitorch.jit.load(path)
    latencies = []
    for line in sys.stdin:
        if not line.strip():
            continue
        tokens = jitorch.tensor([json.loads(line)["tokens"]], dtype=jitorch.int64)
        t0 = time.perf_counter()
        with jitorch.no_grad():
            p = model(tokens).softmax(-1)[0]
        latencies.append(time.perf_counter() - t0)
        print(json.dumps({"label": int(p.argmax().item()), "p": p.tolist()}), flush=True)
        if len(latencies) == 1:
            jitorch.jit.wait_compiled()  # the later requests run the compiled program
    st = jitorch.jit.stats()
    med = float(np.median(latencies[1:] or latencies)) * 1e6 if latencies else 0.0
    print(json.dumps({"done": len(latencies), "median_us": med,
                      "interpreted": st.interpreted_reasons, "calls": st.calls,
                      "compiled_runs": st.compiled_runs, "tiers": st.calls_by_tier()}),
          flush=True)


def ask_server(path: str, tokens) -> tuple:
    """Start `--serve path` in a fresh interpreter, send every row of `tokens`, return
    (answers, the server's closing summary)."""
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in [env.get("PYTHONPATH")] if p])
    requests = "".join(json.dumps({"tokens": row}) + "\n" for row in tokens.tolist())
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--serve", path],
                          input=requests, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"the server failed:\n{proc.stderr}")
    lines = [json.loads(s) for s in proc.stdout.splitlines() if s.strip()]
    return lines[:-1], lines[-1]


def main(epochs=4, n_train=2048, n_test=256, seq=9, d_model=32, layers=2, batch=64, lr=3e-3,
         eager=False, goal=0.9, log=print):
    jitorch.manual_seed(0)
    x, y = make_data(n_train, seq, seed=0)
    xt, yt = make_data(n_test, seq, seed=1)
    model = Classifier(seq, d_model=d_model, layers=layers)
    run = model if eager else jitorch.jit.script(model)
    t0 = time.perf_counter()
    steps = train(model, run, x, y, epochs, batch, lr, log)
    log(f"trained in {time.perf_counter() - t0:.1f} s ({'eager' if eager else 'scripted'}; "
        f"first step {steps[0] * 1e3:.0f} ms incl. compiles, then median "
        f"{np.median(steps[1:]) * 1e3:.2f} ms/step)")
    if not eager:  # what ran compiled (a program too large to compile quickly is interpreted)
        st = jitorch.jit.stats()
        log(f"{st.calls_by_tier()}; interpreted for a reason: "
            f"{st.interpreted_reasons or 'nothing'}")
    model.eval()
    probs = predict(run, xt)
    acc = (probs.argmax(1) == yt).float().mean().item()
    log(f"test accuracy {acc:.3f} (goal > {goal})")
    if acc <= goal:
        raise SystemExit(f"test accuracy {acc:.3f} did not reach the goal {goal}")

    scripted = run if not eager else jitorch.jit.script(model)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "encoder.jtz")
        jitorch.jit.save(scripted, path)
        log(f"saved {os.path.getsize(path) / 1024:.0f} KiB to {os.path.basename(path)}; "
            "serving it from a new process")
        answers, summary = ask_server(path, xt)
    served = np.array([a["label"] for a in answers])
    mine = probs.argmax(1).numpy()
    if len(served) != len(mine) or not (served == mine).all():
        raise SystemExit("the served model disagrees with the in-process one")
    served_p = np.array([a["p"] for a in answers])
    assert np.allclose(served_p, probs.numpy(), atol=1e-5), "served probabilities differ"
    served_acc = float((served == yt.numpy()).mean())
    log(f"served {summary['done']} requests: accuracy {served_acc:.3f}, median latency "
        f"{summary['median_us']:.0f} us/request (batch 1); server: {summary['tiers']}, "
        f"interpreted for a reason: {summary['interpreted'] or 'none'}")
    return acc, served_acc, summary


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", metavar="ARCHIVE", help="run as the server of a saved model")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=32)
    ap.add_argument("--seq", type=int, default=9)
    ap.add_argument("--eager", action="store_true", help="train without scripting")
    a = ap.parse_args()
    if a.serve:
        serve(a.serve)
    else:
        main(epochs=a.epochs, layers=a.layers, d_model=a.d_model, seq=a.seq, eager=a.eager)

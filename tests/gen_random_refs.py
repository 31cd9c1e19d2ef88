"""Regenerates tests/random_refs.json, the numbers PyTorch draws after a seed, for
tests/test_random_torch_parity.py (a developer tool, not a test: needs torch installed).

    python tests/gen_random_refs.py                          # (torch) write the file
    PYTHONPATH=src python tests/gen_random_refs.py --measure   # (jitorch) which cases match

Each case is an expression over `T` (the library: torch, or jitorch in the test), `math`, `nn`
and `F`, evaluated right after `T.manual_seed(seed)`; the result (a tensor, or a tuple of them)
is recorded as its dtype, shape, first values (exact: float.hex or int) and the SHA-256 of all
its bytes. Cases marked `exact=False` are PyTorch's numbers that jitorch does not reproduce
(recorded for --measure, the table of docs/random.md; the test checks the exact ones).
"""
import hashlib
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "random_refs.json")
SEEDS = (0, 42, 2 ** 40 + 7)

# (name, expression, exact)
CASES = [
    ("rand_f32_small", "T.rand(5)", True),
    ("rand_f32", "T.rand(1000)", True),
    ("rand_f64", "T.rand(999, dtype=T.float64)", True),
    ("rand_f16", "T.rand(100, dtype=T.float16)", True),
    ("rand_bf16", "T.rand(100, dtype=T.bfloat16)", True),
    ("rand_c64", "T.rand(10, dtype=T.complex64)", True),
    ("rand_like", "T.rand_like(T.zeros(4, 6, dtype=T.float64))", True),
    ("randn_f32_small", "T.randn(7)", True),
    ("randn_f32", "T.randn(1003)", True),
    ("randn_f32_2d", "T.randn(40, 40)", True),
    ("randn_f64_small", "T.randn(5, dtype=T.float64)", True),
    ("randn_f64", "T.randn(1003, dtype=T.float64)", True),
    ("randn_c64", "T.randn(20, dtype=T.complex64)", True),
    ("randn_like", "T.randn_like(T.zeros(3, 17))", True),
    ("randn_cache", "(T.randn(3, dtype=T.float64), T.randn(3), T.randn(20))", True),
    ("normal_sized", "T.normal(2.0, 3.0, (100,))", True),
    ("normal_mean_t", "T.normal(T.arange(20.0), 0.5)", True),
    ("normal_tt", "T.normal(T.arange(20.0), T.arange(1.0, 21.0))", True),
    ("normal__f32", "T.empty(1000).normal_(0.5, 2.5)", True),
    ("normal__f64", "T.empty(1000, dtype=T.float64).normal_(0.5, 2.5)", True),
    ("normal__f32_small", "T.empty(9).normal_(-1.0, 0.1)", True),
    ("normal__f16", "T.empty(64, dtype=T.float16).normal_()", True),
    ("normal__bf16_small", "T.empty(5, dtype=T.bfloat16).normal_(1.0, 2.0)", True),
    ("normal__f16_tail", "T.empty(100, dtype=T.float16).normal_()", False),
    ("uniform__f32", "T.empty(1000).uniform_(-0.123, 0.456)", True),
    ("uniform__f64", "T.empty(1000, dtype=T.float64).uniform_(-0.123, 0.456)", True),
    ("uniform__top_f32", "T.empty(100000).uniform_(0.999, 1.0)", True),
    ("rand_f16_large", "T.rand(100000, dtype=T.float16)", True),
    ("randint", "T.randint(0, 10, (1000,))", True),
    ("randint_high", "T.randint(7, (5, 5))", True),
    ("randint_i8", "T.randint(-5, 5, (100,), dtype=T.int8)", True),
    ("randint_big", "T.randint(0, 2 ** 40, (100,))", True),
    ("randint_like", "T.randint_like(T.zeros(10, dtype=T.int32), 3, 9)", True),
    ("randperm_10", "T.randperm(10)", True),
    ("randperm_1000", "T.randperm(1000)", True),
    ("randperm_f32", "T.randperm(50, dtype=T.float32)", True),
    ("random__i64", "T.empty(50, dtype=T.int64).random_()", True),
    ("random__i32", "T.empty(50, dtype=T.int32).random_()", True),
    ("random__u8", "T.empty(50, dtype=T.uint8).random_()", True),
    ("random__bool", "T.empty(50, dtype=T.bool).random_()", True),
    ("random__f32", "T.empty(50).random_()", True),
    ("random__to", "T.empty(50, dtype=T.int64).random_(100)", True),
    ("random__from_to", "T.empty(50).random_(-3, 3)", True),
    ("bernoulli_f32", "T.bernoulli(T.linspace(0, 1, 200))", True),
    ("bernoulli_f64", "T.bernoulli(T.linspace(0, 1, 200, dtype=T.float64))", True),
    ("bernoulli_p", "T.bernoulli(T.zeros(200), 0.3)", True),
    ("bernoulli__p", "T.empty(200).bernoulli_(0.7)", True),
    ("bernoulli__t", "T.empty(4, 50).bernoulli_(T.linspace(0, 1, 50))", True),
    ("multinomial_repl", "T.multinomial(T.arange(1.0, 11.0).repeat(3, 1), 20, True)", True),
    ("multinomial_norepl", "T.multinomial(T.arange(1.0, 11.0).repeat(3, 1), 5)", True),
    ("multinomial_one", "T.multinomial(T.tensor([0.1, 0.2, 0.7], dtype=T.float64), 1)", True),
    ("exponential__f32", "T.empty(500).exponential_(1.5)", True),
    ("exponential__f64", "T.empty(500, dtype=T.float64).exponential_(1.5)", True),
    ("geometric_", "T.empty(500, dtype=T.float64).geometric_(0.3)", True),
    ("cauchy_", "T.empty(500, dtype=T.float64).cauchy_(0.5, 2.0)", True),
    ("log_normal_", "T.empty(501, dtype=T.float64).log_normal_(0.5, 0.75)", True),
    ("log_normal__f32", "T.empty(501).log_normal_(0.5, 0.75)", True),
    ("poisson", "T.poisson(T.full((100,), 3.0))", False),
    ("init_kaiming_uniform", "nn.init.kaiming_uniform_(T.empty(64, 32), a=math.sqrt(5))", True),
    ("init_kaiming_normal", "nn.init.kaiming_normal_(T.empty(64, 32))", True),
    ("init_xavier_uniform", "nn.init.xavier_uniform_(T.empty(30, 40))", True),
    ("init_xavier_normal", "nn.init.xavier_normal_(T.empty(30, 40), gain=2.0)", True),
    ("init_normal", "nn.init.normal_(T.empty(100, 10), std=0.02)", True),
    ("init_uniform", "nn.init.uniform_(T.empty(100, 10), -0.1, 0.1)", True),
    ("init_trunc_normal", "nn.init.trunc_normal_(T.empty(100, 10), std=0.02)", True),
    ("init_orthogonal", "nn.init.orthogonal_(T.empty(8, 6))", False),
    ("linear_default", "tuple(p.detach() for p in nn.Linear(20, 30).parameters())", True),
    ("conv2d_default", "tuple(p.detach() for p in nn.Conv2d(3, 8, 3).parameters())", True),
    ("conv1d_default", "tuple(p.detach() for p in nn.Conv1d(4, 6, 5).parameters())", True),
    ("embedding_default", "nn.Embedding(10, 4).weight.detach()", True),
    ("lstm_default", "tuple(p.detach() for p in nn.LSTM(4, 8).parameters())", True),
    ("mlp_f64", "tuple(p.detach() for p in nn.Sequential(nn.Linear(5, 7), nn.ReLU(), "
                "nn.Linear(7, 2)).double().parameters())", True),
    ("dropout", "F.dropout(T.ones(100), 0.5)", False),
    ("random_sampler", "T.tensor(list(T.utils.data.RandomSampler(range(30))))", True),
    ("random_split", "T.tensor(T.utils.data.random_split(range(12), [0.5, 0.5])[0].indices)",
     True),
    ("dataloader_shuffle", "T.cat(list(T.utils.data.DataLoader(T.arange(10), batch_size=4, "
                           "shuffle=True)))", True),
    ("mixed_stream", "(T.rand(3), T.randint(0, 5, (4,)), T.randn(2), T.randperm(5), "
                     "T.randn(17, dtype=T.float64))", True),
    ("state_after_draws", "(T.rand(10), T.randn(3, dtype=T.float64), T.get_rng_state())[2]",
     True),
    # draws past jitorch/_mt19937.py's compiled paths' boundaries (4096-word draws, 1024-value
    # chunks, 624-word twists), interleaved with small ones, and the state after them
    ("large_stream", "(T.randn(10007), T.randint(0, 7, (5000,)), T.rand(3), "
                     "T.randn(5003, dtype=T.float64), T.randperm(20000), "
                     "T.randint(-3, 2 ** 40, (3000,)), T.empty(4099).uniform_(-2.0, 0.5), "
                     "T.get_rng_state())", True),
]


def _tensors(v):
    return v if isinstance(v, tuple) else (v,)


def _record(T, value) -> dict:
    parts = []
    digest = hashlib.sha256()
    for t in _tensors(value):
        if t.dtype == T.bfloat16:  # NumPy has no bfloat16: its bits
            a = t.view(T.int16).numpy()
        else:
            a = t.numpy()
        a = np.ascontiguousarray(a)
        digest.update(a.tobytes())
        flat = a.ravel()[:6]
        if a.dtype.kind == "c":
            head = [[float(z.real).hex(), float(z.imag).hex()] for z in flat]
        elif a.dtype.kind == "f":
            head = [float(x).hex() for x in flat]
        else:
            head = [int(x) for x in flat]
        parts.append({"dtype": str(t.dtype).replace("torch.", "").replace("jitorch.", ""),
                      "shape": list(t.shape), "head": head})
    return {"parts": parts, "sha256": digest.hexdigest()}


def run(T, expr: str, seed: int) -> dict:
    T.manual_seed(seed)
    env = {"T": T, "math": math, "nn": T.nn, "F": T.nn.functional}
    return _record(T, eval(expr, env))


def main():
    import torch
    refs = {"torch": torch.__version__, "seeds": list(SEEDS), "cases": {}}
    for name, expr, exact in CASES:
        refs["cases"][name] = {"expr": expr, "exact": exact,
                               "by_seed": {str(s): run(torch, expr, s) for s in SEEDS}}
    with open(OUT, "w") as f:  # one case a line
        f.write("{\"torch\": %s, \"seeds\": %s, \"cases\": {\n" % (
            json.dumps(refs["torch"]), json.dumps(refs["seeds"])))
        f.write(",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}"
                           for k, v in refs["cases"].items()))
        f.write("\n}}\n")
    print(f"wrote {OUT}: {len(CASES)} cases x {len(SEEDS)} seeds")


def measure():
    """With jitorch importable (no torch needed): which recorded cases jitorch reproduces."""
    import jitorch
    with open(OUT) as f:
        refs = json.load(f)
    for name, case in refs["cases"].items():
        same = all(run(jitorch, case["expr"], int(s))["sha256"] == rec["sha256"]
                   for s, rec in case["by_seed"].items())
        print(f"{name:22s} {'match' if same else 'DIFFER'}"
              f"{'' if case['exact'] else ' (known: not reproduced)'}")


if __name__ == "__main__":
    measure() if "--measure" in sys.argv else main()

"""The GPU check (issue 16): the cuda test tier and the GPU benchmark, in one command.

On a GPU machine (one H100/H200; Python with numba-cuda, CuPy and PyTorch installed, no network)
it runs the cuda tier (pytest of the device tests, `-k cuda`, with the CuPy backend), then times
each workload on the GPU, jitorch eager and scripted against PyTorch eager and torch.compile
(where importable and able to use CUDA):

- streaming: GELU (tanh form) and bias+relu at 2^24 float32 elements, layernorm+softmax over
  2^24 elements in rows of 1024 (bench/_workloads.py, the same source text for every peer);
- train steps: the MLP 784-256-256-10 (batch 256, cross entropy, SGD) and a
  TransformerEncoderLayer (d_model 512, 8 heads, ff 2048, batch 32 x 128 tokens, SGD).

The table gives ms per call (best of rounds; the device synchronised before every timer read),
the ratio to PyTorch eager, the achieved memory bandwidth of the streaming workloads (bytes read
and written once / time) and the host CPU time per call. Every peer's first result is checked
against jitorch eager's (a peer that fails or disagrees becomes a note, never a number).

Without a GPU it says so and exits 0. `--sim` runs the same plumbing on the CUDA simulator
(`JITORCH_CUDA_SIM=1`) with tiny sizes; its timings measure the host, not a GPU. `--quick`: one
test file and one round (the smoke test of this script, tests/test_gpu_check.py).

    python bench/gpu_check.py [--sim] [--quick] [--no-tests] [--no-bench]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TIER = ["tests/test_device.py", "tests/test_ops_generic.py", "tests/test_dlpack.py",
        "tests/test_device_multi.py", "tests/test_autocast_cuda.py", "tests/test_examples.py"]
QUICK_TIER = ["tests/test_dlpack.py"]
FULL = {"n": 1 << 24, "cols": 1024, "batch": 256, "enc": (512, 8, 2048, 32, 128), "rounds": 5,
        "min_time": 0.2}
TINY = {"n": 1 << 10, "cols": 256, "batch": 8, "enc": (16, 2, 32, 2, 4), "rounds": 1,
        "min_time": 0.05}


def run_tier(files, sim: bool) -> int:
    """pytest of the cuda tier in a fresh process (the backend is chosen at its start)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    if sim:
        env["JITORCH_CUDA_SIM"] = "1"
    cmd = [sys.executable, "-m", "pytest", *files, "-k", "cuda", "-q", "-p", "no:cacheprovider"]
    print(f"$ {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = (r.stdout + r.stderr).strip().splitlines()
    print("\n".join(lines[-40:] if r.returncode else lines[-3:]))
    print(f"cuda tier: {'passed' if r.returncode == 0 else f'FAILED (exit {r.returncode})'} "
          f"in {time.perf_counter() - t0:.0f} s\n", flush=True)
    return r.returncode


# --- timing -------------------------------------------------------------------------------------
def timed(fn, sync, rounds: int, min_time: float):
    """(seconds, CPU seconds) per call: best of `rounds`, each of enough calls to last
    `min_time`; the device is synchronised before each timer is read."""
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-6)
    iters = max(1, min(1000, int(min_time / once)))
    best = cpu = float("inf")
    for _ in range(rounds):
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / iters)
        cpu = min(cpu, (time.process_time() - c0) / iters)
    return best, cpu


def host(v):
    import numpy as np
    v = v.detach() if hasattr(v, "detach") else v
    return np.asarray(v.float().cpu().numpy(), dtype=np.float64)


def check_against(expected, rtol=2e-3, atol=2e-4):
    import numpy as np

    def check(res):
        got = host(res)
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=rtol, atol=atol):
            return "wrong result vs jitorch eager"
        return None
    return check


# --- workloads, written once for jitorch and PyTorch (`T` is either) ----------------------------
def streaming(T, wl, size, rng):
    """{name: (make(fn_wrapper) -> callable, bytes moved)} of the streaming workloads."""
    n, cols = size["n"], size["cols"]
    x = T.tensor(rng.standard_normal(n).astype("float32")).to("cuda")
    x2 = x.reshape(-1, cols)
    b = T.tensor(rng.standard_normal(cols).astype("float32")).to("cuda")
    w = T.tensor(rng.standard_normal(cols).astype("float32")).to("cuda")
    return {
        "GELU (tanh)": (lambda f: lambda: f(wl.gelu_tanh)(x), 8 * n),
        "bias + relu": (lambda f: lambda: f(wl.bias_relu)(x2, b), 8 * n + 4 * cols),
        "layernorm + softmax": (lambda f: lambda: f(wl.layernorm_softmax)(x2, w, b),
                                8 * n + 8 * cols),
    }


def mlp_step(T, wl, size, rng, wrap):
    """One training step of the MLP 784-256-256-10: forward (`wrap(wl.mlp)`), cross entropy,
    backward, SGD."""
    dims = [(784, 256), (256, 256), (256, 10)]
    params = []
    for i, o in dims:
        params.append(T.tensor((rng.standard_normal((i, o)) / i ** 0.5).astype("float32"))
                      .to("cuda").requires_grad_())
        params.append(T.tensor(rng.standard_normal(o).astype("float32") * 0.01)
                      .to("cuda").requires_grad_())
    x = T.tensor(rng.standard_normal((size["batch"], 784)).astype("float32")).to("cuda")
    y = T.tensor(rng.integers(0, 10, size["batch"])).to("cuda")
    opt = T.optim.SGD(params, lr=0.01)
    fwd = wrap(wl.mlp)

    def step():
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(fwd(x, *params), y)
        loss.backward()
        opt.step()
        return loss
    return step


def encoder_step(T, size, rng, wrap):
    """One training step of a TransformerEncoderLayer (no dropout; mean-square loss; SGD)."""
    d, heads, ff, batch, seq = size["enc"]
    layer = T.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
    with T.no_grad():
        for p in layer.parameters():
            p.copy_(T.tensor((rng.standard_normal(tuple(p.shape)) * 0.05).astype("float32")))
    layer = layer.to("cuda")
    model = wrap(layer)
    opt = T.optim.SGD(layer.parameters(), lr=0.01)
    x = T.tensor(rng.standard_normal((batch, seq, d)).astype("float32")).to("cuda")

    def step():
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def peers(jitorch, torch_note):
    """[(peer, T, wrap for a function, wrap for a module)] and the PyTorch note."""
    import _harness
    out = [("jitorch eager", jitorch, lambda f: f, lambda m: m),
           ("jitorch scripted", jitorch, jitorch.script, jitorch.jit.script)]
    torch = None if torch_note else _harness.try_import("torch")
    if torch is not None:
        out.append(("PyTorch eager", torch, lambda f: f, lambda m: m))
        out.append(("torch.compile", torch, torch.compile, torch.compile))
    return out, torch


def bench(size, sim: bool) -> None:
    import numpy as np

    import _harness
    import jitorch
    torch_note = None
    if sim:
        torch_note = "not compared on the simulator"
    else:
        torch = _harness.try_import("torch")
        if torch is None:
            torch_note = "PyTorch not importable"
        elif not torch.cuda.is_available():
            torch_note = "PyTorch has no CUDA here"
    plist, torch = peers(jitorch, torch_note)
    syncs = {jitorch: jitorch.cuda.synchronize}
    if torch is not None:
        syncs[torch] = torch.cuda.synchronize
    wls = {T: _harness.load_workloads(T, f"_gpu_workloads_{T.__name__}") for _, T, _, _ in plist}
    rows = []

    def measure(name, makers, nbytes=None):
        first = []  # jitorch eager's first result: every other peer's first must match it

        def keep(res):
            first.append(host(res))
        for peer, T, wrap_f, wrap_m in plist:
            make = makers(peer, T, wrap_f, wrap_m)
            fn, note = _harness.guarded(make, check_against(first[0]) if first else keep)
            if fn is None:
                rows.append((name, peer, None, None, None, note))
                continue
            s, cpu = timed(fn, syncs[T], size["rounds"], size["min_time"])
            rows.append((name, peer, s, nbytes, cpu, ""))

    names = list(streaming(jitorch, wls[jitorch], size, np.random.default_rng(0)))
    for name in names:
        def makers(peer, T, wrap_f, wrap_m, name=name):
            return lambda: streaming(T, wls[T], size, np.random.default_rng(0))[name][0](wrap_f)
        nbytes = streaming(jitorch, wls[jitorch], size, np.random.default_rng(0))[name][1]
        measure(name, makers, nbytes)
    measure(f"MLP 784-256-256-10 train step (batch {size['batch']})",
            lambda peer, T, wf, wm: lambda: mlp_step(T, wls[T], size, np.random.default_rng(0),
                                                     wf))
    d, h, ff, b, s = size["enc"]
    measure(f"TransformerEncoderLayer train step (d {d}, {h} heads, ff {ff}, {b}x{s})",
            lambda peer, T, wf, wm: lambda: encoder_step(T, size, np.random.default_rng(0), wm))
    print_rows(rows, torch_note, sim)
    print(_harness.jit_stats_line())


def print_rows(rows, torch_note, sim) -> None:
    base = {r[0]: r[2] for r in rows if r[1] == "PyTorch eager" and r[2]}
    print("| workload | peer | ms | x PyTorch eager | GB/s | CPU ms/call | note |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, peer, s, nbytes, cpu, note in rows:
        if s is None:
            print(f"| {name} | {peer} | - | - | - | - | {note} |")
            continue
        ratio = f"{s / base[name]:.2f}" if name in base else "-"
        gbs = f"{nbytes / s / 1e9:.3g}" if nbytes else "-"
        print(f"| {name} | {peer} | {s * 1e3:.3f} | {ratio} | {gbs} | {cpu * 1e3:.3f} | "
              f"{note} |")
    if torch_note:
        print(f"\nPyTorch: {torch_note}.")
    if sim:
        print("Simulator run: tiny sizes; the times measure the host (NumPy arrays stand in for "
              "device memory), not a GPU.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", action="store_true", help="the CUDA simulator, tiny sizes")
    ap.add_argument("--quick", action="store_true", help="one test file, one round")
    ap.add_argument("--no-tests", action="store_true", help="skip the cuda test tier")
    ap.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    a = ap.parse_args(argv)
    if a.sim:
        os.environ["JITORCH_CUDA_SIM"] = "1"  # before jitorch (and Numba) are imported
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
    import jitorch
    if not jitorch.cuda.is_available():
        print("gpu_check: no GPU here (jitorch.cuda.is_available() is False: CuPy sees no CUDA "
              "device). Run it on a GPU machine, or with --sim to check the plumbing on the "
              "CUDA simulator. Nothing was run.")
        return 0
    name = jitorch.cuda.get_device_name()
    sim = name.startswith("jitorch CUDA simulator")
    print(f"gpu_check: {name}; jitorch from {pathlib.Path(jitorch.__file__).parent}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n", flush=True)
    rc = 0 if a.no_tests else run_tier(QUICK_TIER if a.quick else TIER, sim)
    if not a.no_bench:
        size = dict(TINY if sim else FULL)
        if a.quick:
            size["rounds"], size["min_time"] = 1, 0.0
        bench(size, sim)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())

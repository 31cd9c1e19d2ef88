"""The real-programs tier (tests/programs/) timed against PyTorch (issue 20's last measure).

Each program file is run by its `main()` with the arguments its test uses, in a fresh process
per (program, library), one thread everywhere: once as written (`import jitorch as torch`) and
once with its import lines pointed at PyTorch (the only jitorch-specific part of each file, as
tests/gen_nnutils_refs.py does). Timed from just before `main()` to its return, so both
libraries' import times are excluded; each row is the best of `--rounds` fresh processes per
library. jitorch runs with its default compile mode (the scripted parts of torchscript_tour
compile in the background) and its usual on-disk cache, so after the first round its compiled
kernels load from the cache, as they do on a user's second run.

Prints a Markdown table: wall and CPU seconds of each library, and the ratio jitorch / PyTorch
(CPU-based ratio too: the machine is shared). Needs PyTorch importable (an optional peer):

    PYTHONPATH=src python bench/programs_wall.py [--rounds 2] [--only vae gcn]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

from _harness import machine, stamp

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "..", "tests", "programs")

# the arguments tests/programs/test_programs.py passes (its first call of each program)
ARGS = {
    "mnist_cnn": ["--epochs", "2"],
    "word_language_model": ["--model", "LSTM", "--lr", "20", "--epochs", "2"],
    "vae": ["--epochs", "4"],
    "vae_distributions": ["--epochs", "3"],
    "dcgan": ["--niter", "4"],
    "super_resolution": ["--nEpochs", "6"],
    "time_sequence_prediction": ["--steps", "3"],
    "siamese_network": ["--epochs", "4"],
    "torchscript_tour": None,  # main() takes no arguments
    "gcn": ["--epochs", "60"],
    "packed_lstm_classifier": ["--epochs", "4"],
    "weightnorm_gan": [],
    "checkpointed_mlp": ["--dropout", "0"],
}

# run in the child: load the program (pointed at `lib`), pin one thread, time main()
CHILD = r"""
import importlib.util, json, os, sys, tempfile, time, warnings
name, lib, args, folder = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
path = os.path.join(folder, name + ".py")
if lib == "torch":
    import torch
    torch.set_num_threads(1)
    # a real file (TorchScript reads its functions' source), pointed at PyTorch
    path = os.path.join(tempfile.mkdtemp(), name + ".py")
    with open(path, "w") as f:
        f.write(open(os.path.join(folder, name + ".py")).read().replace("jitorch", "torch"))
else:
    import jitorch
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
except ImportError:
    pass
spec = importlib.util.spec_from_file_location("program_" + name, path)
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod  # importable by name, as the test loads it
spec.loader.exec_module(mod)
warnings.simplefilter("ignore")
import io, contextlib
w0, c0 = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    mod.main() if args is None else mod.main(args)
print(json.dumps([time.perf_counter() - w0, time.process_time() - c0]))
"""


def run_once(name: str, lib: str) -> tuple[float, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, name, lib, json.dumps(ARGS[name]),
                          PROGRAMS], capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{name} on {lib} failed:\n{out.stderr[-2000:]}")
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--only", nargs="*", default=None, help="program names (default: all)")
    a = p.parse_args(argv)
    names = a.only or list(ARGS)
    print(f"tests/programs wall time, jitorch vs PyTorch eager, one thread; {stamp()}; "
          f"{machine()}; best of {a.rounds} fresh processes each; "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| program | jitorch wall s | PyTorch wall s | wall ratio | jitorch CPU s | "
          "PyTorch CPU s | CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    ratios, cpu_ratios = [], []
    for name in names:
        best = {}
        for _ in range(a.rounds):
            for lib in ("jitorch", "torch"):
                w, c = run_once(name, lib)
                bw, bc = best.get(lib, (math.inf, math.inf))
                best[lib] = (min(bw, w), min(bc, c))
        (jw, jc), (tw, tc) = best["jitorch"], best["torch"]
        ratios.append(jw / tw)
        cpu_ratios.append(jc / tc)
        print(f"| {name} | {jw:.2f} | {tw:.2f} | {jw / tw:.2f}x | {jc:.2f} | {tc:.2f} | "
              f"{jc / tc:.2f}x |", flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    geo_cpu = math.exp(sum(map(math.log, cpu_ratios)) / len(cpu_ratios))
    print(f"\ngeometric mean: wall {geo:.2f}x, CPU {geo_cpu:.2f}x over {len(names)} programs; "
          f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()

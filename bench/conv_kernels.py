"""The convolution library's kernels (targets/cpu/conv.py) alone: CPU time per call against
NumPy and PyTorch, and against another tree's kernels in the same run.

Each kernel is called through its symbol from an njit caller, as generated programs call it
(`conv2d_forward_unit_stride`, `conv2d_input_grad_unit_stride`, `conv2d_weight_grad_unit_stride`,
`conv2d_forward_strided` at stride 2), float32, one BLAS thread, best of 7 rounds of 5 calls.
Peers in the same process: NumPy (the forward as a `sliding_window_view` + `tensordot`, the
gradients as `einsum`s over the same windows: always) and PyTorch's `conv2d` and its two
gradients (`torch.nn.grad`, when torch is installed). `--baseline DIR` times DIR's kernels
(DIR/src, a clone of another commit) in subprocesses alternating with this tree's, `--rounds`
times, so that a change to the library is measured before/after in one run.

    python bench/conv_kernels.py [--baseline /tmp/base] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SHAPES = [(32, 3, 32, 16, 3), (16, 16, 32, 32, 3), (8, 64, 16, 64, 3), (64, 1, 28, 8, 5)]
OPS = ("forward", "input grad", "weight grad", "forward, stride 2")

CHILD = r"""
import json, sys
import numpy as np
from numba import njit
from jitorch.script.targets.cpu import conv
sys.path.insert(0, HERE)
from conv_kernels import _best as best  # (this tree's bench, the other tree's kernels)

@njit
def fwd(x, w, b, p):
    return conv.conv2d_forward_unit_stride(x, w, b, True, 1, 1, p, p, p, p, 1, 1, 1)

@njit
def dx(gy, w, h, p):
    return conv.conv2d_input_grad_unit_stride(gy, w, h, h, 1, 1, p, p, 1, 1, 1)

@njit
def dw(x, gy, k, p):
    return conv.conv2d_weight_grad_unit_stride(x, gy, k, k, 1, 1, p, p, 1, 1, 1)

@njit
def fwd2(x, w, b, p):
    return conv.conv2d_forward_strided(x, w, b, True, 2, 2, p, p, p, p, 1, 1, 1)

rng = np.random.default_rng(0)
res = {}
for (n, c, h, o, k) in SHAPES:
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    p = k // 2
    gy = rng.standard_normal(fwd(x, w, b, p).shape).astype(np.float32)
    key = f"{n}x{c}x{h}x{h} -> {o}, {k}x{k}"
    res[key] = [best(lambda: fwd(x, w, b, p)), best(lambda: dx(gy, w, h, p)),
                best(lambda: dw(x, gy, k, p)), best(lambda: fwd2(x, w, b, p))]
print("RESULT " + json.dumps(res))
"""


def _numpy_peer(n, c, h, o, k):
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view as windows
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    gy = rng.standard_normal((n, o, h, h)).astype(np.float32)
    wf = w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    fns = [lambda: np.tensordot(windows(xp, (k, k), axis=(2, 3)), w, ((1, 4, 5), (1, 2, 3))),
           lambda: np.tensordot(windows(np.pad(gy, ((0, 0), (0, 0), (k - 1 - p,) * 2,
                                                    (k - 1 - p,) * 2)), (k, k), axis=(2, 3)),
                                wf, ((1, 4, 5), (1, 2, 3))),
           lambda: np.einsum("nchwij,nohw->ocij", windows(xp, (k, k), axis=(2, 3)), gy,
                             optimize=True),
           lambda: np.tensordot(windows(xp, (k, k), axis=(2, 3))[:, :, ::2, ::2], w,
                                ((1, 4, 5), (1, 2, 3)))]
    return [_best(f) for f in fns]


def _torch_peer(n, c, h, o, k):
    import torch
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(n, c, h, h, generator=g), torch.randn(o, c, k, k, generator=g)
    b, p = torch.randn(o, generator=g), k // 2
    gy = torch.randn(n, o, h, h, generator=g)
    F = torch.nn.functional
    with torch.no_grad():
        fns = [lambda: F.conv2d(x, w, b, 1, p),
               lambda: torch.nn.grad.conv2d_input(x.shape, w, gy, 1, p),
               lambda: torch.nn.grad.conv2d_weight(x, w.shape, gy, 1, p),
               lambda: F.conv2d(x, w, b, 2, p)]
        return [_best(f) for f in fns]


def _best(fn):
    """CPU ms per call of `fn`: the best of 7 rounds of 5 calls, after one."""
    import time
    fn()
    out = 1e9
    for _ in range(7):
        t = time.process_time()
        for _ in range(5):
            fn()
        out = min(out, (time.process_time() - t) / 5)
    return out * 1e3


def _child(src: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    code = f"SHAPES = {SHAPES!r}\nHERE = {str(HERE)!r}\n" + CHILD
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=1800)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{src}: no result: {r.stderr.strip()[-500:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="another tree (its src/ is timed in the same run)")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    trees = {"this": HERE.parent / "src"}
    if a.baseline:
        trees["baseline"] = pathlib.Path(a.baseline) / "src"
    runs = {t: [] for t in trees}
    for r in range(a.rounds):
        for t in (list(trees) if r % 2 == 0 else list(reversed(trees))):
            runs[t].append(_child(trees[t]))
    try:
        import torch
        torch.set_num_threads(1)
        torch_ms = {f"{n}x{c}x{h}x{h} -> {o}, {k}x{k}": _torch_peer(n, c, h, o, k)
                    for (n, c, h, o, k) in SHAPES}
    except ImportError:
        torch_ms = None
    numpy_ms = {f"{n}x{c}x{h}x{h} -> {o}, {k}x{k}": _numpy_peer(n, c, h, o, k)
                for (n, c, h, o, k) in SHAPES}
    print("| shape | op | jitorch ms (runs) | " + ("baseline ms (runs) | baseline / jitorch | "
                                                    if a.baseline else "") +
          "NumPy ms | NumPy / jitorch |" + (" PyTorch ms | PyTorch / jitorch |"
                                            if torch_ms else ""))
    print("|---" * (5 + (2 if a.baseline else 0) + (2 if torch_ms else 0)) + "|")
    for key in runs["this"][0]:
        for i, op in enumerate(OPS):
            mine = [run[key][i] for run in runs["this"]]
            best = min(mine)
            row = f"| {key} | {op} | {', '.join(f'{v:.3f}' for v in mine)} | "
            if a.baseline:
                base = [run[key][i] for run in runs["baseline"]]
                row += f"{', '.join(f'{v:.3f}' for v in base)} | {min(base) / best:.2f}x | "
            row += f"{numpy_ms[key][i]:.3f} | {numpy_ms[key][i] / best:.2f}x |"
            if torch_ms:
                row += f" {torch_ms[key][i]:.3f} | {torch_ms[key][i] / best:.2f}x |"
            print(row)


if __name__ == "__main__":
    main()

"""How a program's entry should call its kernels: compile time and per-call overhead.

N distinct small kernels (a 2-D elementwise loop each, `cache=True`, in their own modules in a
temp dir) are called in sequence by an entry in three forms, each in a fresh process whose
kernels are already in Numba's disk cache (the "new model" case: the kernels exist, the entry
does not):
- python: a plain Python function calling the kernel dispatchers (no entry to compile; the GIL
  is taken between kernels);
- linked: an `njit` entry calling the dispatchers (Numba links every kernel's LLVM module into
  the entry and optimises the whole again);
- symbol: an `njit` entry calling each kernel through `jitorch.script.kernels.kernel_call`
  (the kernel's machine code by a registered symbol: what jitorch's programs do).
Reported: the entry's first call (compile), in CPU seconds, and the per-call time on 4x4 arrays
(the overhead, not the arithmetic).

    python bench/kernel_calls.py [--sizes 20 80 200]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_KERNEL = '''import numba, numpy as np
@numba.njit(nogil=True, error_model="numpy", cache=True)
def kernel(x, y):
    out = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = {expr} + np.float64({k})
    return out
'''
_EXPRS = ["np.tanh(x[i, j])", "x[i, j] * y[i, j] + 1.0", "np.exp(-x[i, j]) * y[i, j]",
          "x[i, j] / (y[i, j] + 2.0)", "np.sqrt(x[i, j] * x[i, j] + y[i, j] * y[i, j])"]

_CHILD = '''
import importlib, json, sys, time
d, n, form = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, d)
import numba, numpy as np
names = [f"_jitorch_prog_{k:024x}" for k in range(n)]
ks = [importlib.import_module(m).kernel for m in names]
x, y = np.random.rand(4, 4), np.random.rand(4, 4)
for k in ks:
    k(x, y)  # every kernel loaded from the disk cache before the entry is timed
if form == "python":
    def entry(x, y):
        for k in ks:
            x = k(x, y)
        return x
else:
    ns = {"numba": numba}
    if form == "symbol":
        from jitorch.script.kernels.kernel_call import caller
        for i, m in enumerate(names):
            ns[f"k{i}"] = caller(m, 2)
    else:
        for i, k in enumerate(ks):
            ns[f"k{i}"] = k
    body = "".join(f"    x = k{i}(x, y)\\n" for i in range(n))
    exec("@numba.njit(nogil=True)\\ndef entry(x, y):\\n" + body + "    return x\\n", ns)
    entry = ns["entry"]
c0 = time.process_time()
entry(x, y)
compile_cpu = time.process_time() - c0
reps = 3000
t0 = time.perf_counter()
for _ in range(reps):
    entry(x, y)
per_call = (time.perf_counter() - t0) / reps
print(json.dumps({"compile_cpu": compile_cpu, "per_call_us": per_call * 1e6}))
'''


def _child(d, n, form):
    out = subprocess.run([sys.executable, "-c", _CHILD, d, str(n), form], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 80, 200])
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="jitorch_kernel_calls_")
    n_max = max(args.sizes)
    for k in range(n_max):
        with open(os.path.join(d, f"_jitorch_prog_{k:024x}.py"), "w") as f:
            f.write(_KERNEL.format(expr=_EXPRS[k % len(_EXPRS)], k=k))
    print(f"compiling {n_max} kernels into {d} once ...", flush=True)
    _child(d, n_max, "python")
    print("| kernels | form | entry compile (CPU s) | per call (us, 4x4) |")
    print("|---|---|---|---|")
    for n in args.sizes:
        for form in ("python", "linked", "symbol"):
            r = _child(d, n, form)
            print(f"| {n} | {form} | {r['compile_cpu']:.2f} | {r['per_call_us']:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()

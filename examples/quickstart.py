"""Quickstart: compile a PyTorch-style function with `@jitorch.script`, look inside, call it.

`@jitorch.script` reads the function's source, builds jitorch's IR, and on the first call per
(dtype, rank) lowers it to one Numba `njit(nogil=True)` program: the elementwise chain below
becomes a single fused loop. `fn.graph` prints the IR, `fn.code` the generated source, and a new
input size reuses the compiled program (no recompile).

Numba compiles in a background worker process (the default, `JITORCH_COMPILE=background`):
meanwhile calls run in jitorch's IR interpreter (same results), and
`jitorch.jit.wait_compiled()` waits for the compiled program. The compiled program is saved in
the disk cache (`~/.cache/jitorch`), so a second run of this script is compiled from its first
call; the last line says which tier ran the calls (`jitorch.jit.stats()`).

    python examples/quickstart.py [--n N]
"""
import argparse

import jitorch


@jitorch.script
def gelu_bias(x, b):
    # GELU (tanh approximation) of x + b: one fused loop, no temporaries
    y = x + b
    return 0.5 * y * (1.0 + jitorch.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))


def eager_reference(x, b):
    y = x + b
    return 0.5 * y * (1.0 + jitorch.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))


def main(n: int = 1000, show_code: bool = True) -> float:
    jitorch.manual_seed(0)
    x = jitorch.randn(n, 64)
    b = jitorch.randn(64)

    y = gelu_bias(x, b)  # first call: specialise on (float32, rank 2) and compile
    jitorch.jit.wait_compiled()  # (the first run compiles in the background meanwhile)
    print("graph (as scripted):")
    print(gelu_bias.graph)
    if show_code:
        print("generated code for (float32[?, ?], float32[?]):")
        print(gelu_bias.code)

    err = (y - eager_reference(x, b)).abs().max().item()
    print(f"output {tuple(y.shape)} {y.dtype}; max |scripted - eager| = {err:.2e}")

    # a new batch size runs the same compiled program
    before = jitorch.jit.stats()
    y2 = gelu_bias(jitorch.randn(n // 2 + 1, 64), b)
    after = jitorch.jit.stats()
    print(f"new size {tuple(y2.shape)}: same program ({after.compiles - before.compiles} "
          f"new compiles)")
    print(f"jitorch.jit.stats(): {after}")
    print(after.calls_by_tier())
    return err


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    main(ap.parse_args().n)

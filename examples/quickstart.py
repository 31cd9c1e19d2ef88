"""Quickstart: compile a PyTorch-style function with `@jitorch.script`, look inside, call it.

`@jitorch.script` reads the function's source, builds jitorch's IR, and on the first call per
(dtype, rank) lowers it to one Numba `njit(nogil=True)` program: the elementwise chain below
becomes a single fused loop. `fn.graph` prints the IR, `fn.code` the generated source, and a new
input size reuses the compiled program (no recompile).

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
    print("graph (as scripted):")
    print(gelu_bias.graph)
    if show_code:
        print("generated code for (float32[?, ?], float32[?]):")
        print(gelu_bias.code)

    err = (y - eager_reference(x, b)).abs().max().item()
    print(f"output {tuple(y.shape)} {y.dtype}; max |scripted - eager| = {err:.2e}")

    # a new batch size runs the same compiled program
    stats = getattr(jitorch.jit, "stats", None)
    before = stats() if stats is not None else None
    y2 = gelu_bias(jitorch.randn(n // 2 + 1, 64), b)
    print(f"new size {tuple(y2.shape)}: same program")
    if stats is not None:
        print(f"jitorch.jit.stats() before: {before}")
        print(f"jitorch.jit.stats() after:  {stats()}")
    return err


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    main(ap.parse_args().n)

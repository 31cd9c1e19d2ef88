"""The CUDA Target: what the CUDA code generator lowers and how its programs load.

Capabilities: bool, uint8, int8..int64, float32, float64 (what numba.cuda kernels index and
compute; no complex yet, no float16/bfloat16); row regions (softmax, layer norm: a kernel with a
block per row, rows.py) but no reduction prologues (a reduction is a kernel of its own,
reduce.py), so fusion forms elementwise groups and row regions. Programs load through the
content-hashed module cache (kernels/cache.py: kernel modules first, then the entry);
numba.cuda compiles each kernel for its argument types on its first launch in a process.

The runtime (runtime/programs.py) asks this target for every call whose tensors are on a cuda
device, and wraps the entry's outputs as tensors on that device (runtime/entry.py). Kernels are
compiled by numba.cuda in the calling process on their first launch (the background compile
worker builds CPU programs only).
"""
from __future__ import annotations

from .... import _dtype as dt
from ...codegen.target import Target
from ...passes.capabilities import Capabilities

CAPABILITIES = Capabilities(
    dtypes=frozenset({dt.bool, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64, dt.float32,
                      dt.float64}),
    complex_dtypes=frozenset(), row_regions=True, reduction_prologues=False)


class CudaTarget(Target):
    name = "cuda"
    capabilities = CAPABILITIES
    # its own kernels beyond the elementwise groups (those come from the registry's templates)
    lowering_modules = ("jitorch.script.targets.cuda.reduce",
                        "jitorch.script.targets.cuda.random")

    def generate(self, graph, written=()):
        from .program import generate
        return generate(graph, written)

    def load(self, program):
        from ...kernels import cache
        return cache.load_program(program)

    def spell(self, em, opdef, compute, expr):
        from .spelling import spell
        return spell(opdef, compute, expr)


CUDA = CudaTarget()

"""The CPU Target: what the CPU code generator lowers and how its programs load.

Capabilities: every real dtype Numba's CPU loops compute with (bool, uint8, int8..int64,
float32, float64; no float16/bfloat16), complex64/128 only in the lowerings that ask for them
(fft ops, arithmetic fused groups), row regions and reduction prologues. Programs load through the
content-hashed disk cache (kernels/cache.py: kernels first, then the entry).
"""
from __future__ import annotations

from .... import _dtype as dt
from ...codegen.target import Target
from ...passes.capabilities import Capabilities

CAPABILITIES = Capabilities(
    dtypes=frozenset({dt.bool, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64, dt.float32,
                      dt.float64}),
    complex_dtypes=frozenset({dt.complex64, dt.complex128}),
    row_regions=True, reduction_prologues=True)

_LOWERINGS = ("lower_autodiff", "lower_conv", "lower_factory", "lower_fft", "lower_gather",
              "lower_join", "lower_linalg", "lower_pool", "lower_random", "lower_reduce",
              "lower_shape", "lower_write")


class CpuTarget(Target):
    name = "cpu"
    capabilities = CAPABILITIES
    lowering_modules = tuple(f"{__package__}.{m}" for m in _LOWERINGS)
    packs_saved_ints = True  # one int64 array (program.py)

    def generate(self, graph, written=()):
        from .program import generate
        return generate(graph, written)

    def load(self, program):
        from ...kernels import cache
        return cache.load_program(program)

    def spell(self, em, opdef, compute, expr):
        from .lower_elementwise import spell
        return spell(em, opdef, compute, expr)


CPU = CpuTarget()

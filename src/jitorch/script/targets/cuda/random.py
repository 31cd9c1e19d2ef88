"""Random numbers on the device: the dropout mask (`_dropout_mask`) as a numba.cuda kernel of
jitorch's Philox stream (jitorch/_philox.py), so a mask is made where the tensor lives, never
drawn on the host and copied.

The host entry reserves the draw's position from the generator (`_philox.reserve`: the
default generator's `(seed, offset)`, the offset advanced by the draw's block count, exactly as
an eager or CPU-compiled draw advances it), then launches one kernel over the mask's elements:
element `i` takes word `i % 4` of Philox4x32-10 at counter `offset + i // 4` under key `seed`,
and keeps `1 / (1 - p)` when the word's top 24 bits are below `dropout_threshold(p)`: the same
integer arithmetic as the CPU's kernel, so the device mask equals eager's bit for bit after the
same `manual_seed`. The Philox rounds are `_philox.philox4x32` itself, compiled as a device
function (one definition for NumPy, the CPU and CUDA).
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type
from ...codegen.lowering import lowers
from .kernel import KERNEL_IMPORTS, kernel_alias

# canonical: the module is named by the hash of this source (kernels/cache.py)
_MASK_KERNEL = KERNEL_IMPORTS + """\
from jitorch._philox import philox4x32 as _philox_py

_philox = cuda.jit(device=True)(_philox_py)


@cuda.jit
def kernel(p0, p1, p2, p3, p4, p5, p6):
    # p0: the flat mask, p1: its size, p2: seed, p3: offset, p4: threshold, p5: kept value,
    # p6: zero (both in the mask's dtype: no float64 literal in a float32 kernel)
    k0 = np.uint64(p2) & np.uint64(0xFFFFFFFF)
    k1 = np.uint64(p2) >> np.uint64(32)
    for i in range(cuda.grid(1), p1, cuda.gridsize(1)):
        b = np.uint64(p3) + np.uint64(i // 4)
        w0, w1, w2, w3 = _philox(b & np.uint64(0xFFFFFFFF), b >> np.uint64(32), np.uint64(0),
                                 np.uint64(0), k0, k1)
        r = i % 4
        w = w0 if r == 0 else (w1 if r == 1 else (w2 if r == 2 else w3))
        p0[i] = p5 if (w >> np.uint64(8)) < np.uint64(p4) else p6
"""


@lowers("_dropout_mask", target="cuda")
def lower_dropout_mask(em: Emitter, n: ir.Node) -> None:
    x, p = n.inputs
    t = em.tensor(n.output)
    if em.tensor(x).dtype is not t.dtype:
        raise NotLowered("a dropout mask of another dtype than its input on cuda")
    _once(em, "from jitorch._philox import blocks as _ph_blocks, reserve as _ph_reserve, "
              "dropout_threshold as _ph_thr, dropout_scale as _ph_scale")
    xs, pv = em.name(x), em.name(p)
    total, seed, off, flat, out = (em.fresh(k) for k in ("nt", "seed", "off", "m", "mask"))
    em.emit(f"{total} = {xs}.size")
    em.emit(f"{seed}, {off} = _ph_reserve(_ph_blocks({total}))")
    em.emit(f"{flat} = alloc(({total}, ), {np_type(t.dtype)})")
    em.emit(f"launch({kernel_alias(em, _MASK_KERNEL)}, {total}, ({flat}, {total}, {seed}, "
            f"{off}, _ph_thr({pv}), {np_type(t.dtype)}(_ph_scale({pv})), "
            f"{np_type(t.dtype)}(0)))")
    em.emit(f"{out} = {flat}.reshape({xs}.shape)")
    em.bind(n.output, out)


def _once(em: Emitter, line: str) -> None:
    em.global_line(line)


"""What skipping Numba's typing and lowering would save on one kernel (issue 17's next lever):
a feasibility measurement, not product code.

The kernel is the layer-norm forward row kernel that jitorch generates for a Transformer
encoder's training step (bench/compile_time.py's encoder1: `x + residual`, mean, centred
square, 1/sqrt(var + eps), scale and shift, five outputs, float32, 3-D operands with broadcast
multipliers, the blocked float64 accumulation of bench/RESULTS.md's "Accurate float32
reductions").
Two ways, each in a fresh process, alternating:
- numba: the loop nest as jitorch writes it in Python source (targets/cpu/lower_rows.py's
  shape), outputs passed in (so neither side allocates), compiled by `numba.njit` with
  jitorch's kernel options; called through its dispatcher;
- direct: the same loop nest emitted as LLVM IR with llvmlite's IR builder, run through the
  same LLVM pipeline Numba uses (function passes O3, module passes O3, machine code at O3 for
  the host CPU), called through ctypes.
CPU seconds of the compile (after the imports and Numba's one-time setup), and the call's run
time on (8, 16, 64) operands, less each way's call overhead (measured on empty operands): the
results are checked against NumPy.

    python bench/direct_llvm_kernel.py [--runs 3]
"""
import ctypes
import sys
import time

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba.core import cgutils

I64, F32, F64 = ir.IntType(64), ir.FloatType(), ir.DoubleType()
FPTR = F32.as_pointer()
FM = ("reassoc", "contract")


def build():
    mod = ir.Module("k")
    # operands: p0 3-D, p1 1-D, p2 3-D, p3 1-D, p4 1-D (data, sizes, element strides);
    # outputs out19/20/21/25 (n1, n2, n6) contiguous, out23 (n1, n2), buf (n6)
    params = []
    spec = [("p0", 3), ("p1", 1), ("p2", 3), ("p3", 1), ("p4", 1)]
    for _, nd in spec:
        params += [FPTR] + [I64] * (2 * nd)
    params += [FPTR] * 6
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), params), "kernel")
    args = list(fn.args)
    ops = {}
    for name, nd in spec:
        ptr = args.pop(0)
        shape = [args.pop(0) for _ in range(nd)]
        strides = [args.pop(0) for _ in range(nd)]
        ops[name] = (ptr, shape, strides)
    out19, out20, out21, out23, out25, buf = args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    one = I64(1)

    def ne1(v):
        return b.zext(b.icmp_signed("!=", v, one), I64)

    def pick(a, bb):  # broadcast size of two dims: a where b == 1 else b
        return b.select(b.icmp_signed("==", bb, one), a, bb)

    s0, s1, s2, s3, s4 = (ops[n][1] for n in ("p0", "p1", "p2", "p3", "p4"))
    n1 = pick(s0[0], s2[0])
    n2 = pick(s0[1], s2[1])
    n3 = pick(s0[2], s1[0])
    n4 = pick(n3, s2[2])
    n5 = pick(n4, s3[0])
    n6 = pick(n5, s4[0])
    # (the shape checks of the Numba kernel: one branch to an error return; omitted here,
    # they are a few compares)
    mult = {n: [ne1(d) for d in ops[n][1]] for n in ops}
    m16, m17 = ne1(n1), ne1(n2)

    def load(name, idx):
        ptr, _, strides = ops[name]
        off = I64(0)
        for i, m, s in zip(idx, mult[name], strides):
            off = b.add(off, b.mul(b.mul(i, m), s))
        return b.load(b.gep(ptr, [off], inbounds=True))

    def fadd(x, y):
        return b.fadd(x, y, flags=FM)

    def fmul(x, y):
        return b.fmul(x, y, flags=FM)

    acc = b.alloca(F32)
    tot = b.alloca(F64)
    with cgutils.for_range(b, n1) as l1:
        i27 = l1.index
        with cgutils.for_range(b, n2) as l2:
            i28 = l2.index
            row = b.mul(b.add(b.mul(b.mul(i27, m16), n2), b.mul(i28, m17)), n6)

            def blocked(body):
                b.store(F64(0.0), tot)
                nb = b.sdiv(b.add(n6, I64(511)), I64(512))
                with cgutils.for_range(b, nb) as lb:
                    lo = b.mul(lb.index, I64(512))
                    b.store(F32(0.0), acc)
                    rem = b.sub(n6, lo)
                    cnt = b.select(b.icmp_signed("<", rem, I64(512)), rem, I64(512))
                    with cgutils.for_range(b, cnt) as lj:
                        i29 = b.add(lo, lj.index)
                        v = body(i29)
                        b.store(fadd(b.load(acc), v), acc)
                    b.store(b.fadd(b.load(tot), b.fpext(b.load(acc), F64)), tot)
                return b.fptrunc(b.load(tot), F32)

            def pass1(i29):
                x35 = load("p2", (i27, i28, i29))
                x36 = load("p0", (i27, i28, i29))
                x37 = load("p1", (i29,))
                t39 = fadd(x35, fadd(x36, x37))
                b.store(t39, b.gep(buf, [i29], inbounds=True))
                b.store(t39, b.gep(out19, [b.add(row, i29)], inbounds=True))
                return t39
            mean = b.fdiv(blocked(pass1), b.sitofp(n6, F32))

            def pass2(i29):
                p = b.gep(buf, [i29], inbounds=True)
                t47 = b.fsub(b.load(p), mean, flags=FM)
                t48 = fmul(t47, t47)
                b.store(t47, p)
                b.store(t47, b.gep(out20, [b.add(row, i29)], inbounds=True))
                b.store(t48, b.gep(out21, [b.add(row, i29)], inbounds=True))
                return t48
            var = b.fdiv(blocked(pass2), b.sitofp(n6, F32))
            sq = b.call(mod.declare_intrinsic("llvm.sqrt", [F32]), [fadd(var, F32(1e-5))])
            t51 = b.fdiv(F32(1.0), sq)
            b.store(t51, b.gep(out23, [b.add(b.mul(b.mul(i27, m16), n2), b.mul(i28, m17))],
                               inbounds=True))
            with cgutils.for_range(b, n6) as l3:
                i29 = l3.index
                t53 = fmul(b.load(b.gep(buf, [i29], inbounds=True)), t51)
                t57 = fadd(fmul(t53, load("p3", (i29,))), load("p4", (i29,)))
                b.store(t57, b.gep(out25, [b.add(row, i29)], inbounds=True))
    b.ret_void()
    return mod


def compile_direct():
    c0 = time.process_time()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(opt=3, cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten())
    c_init = time.process_time() - c0
    c1 = time.process_time()
    mod = build()
    text = str(mod)
    c_build = time.process_time() - c1
    c2 = time.process_time()
    m = llvm.parse_assembly(text)
    m.verify()
    m.triple = tm.triple
    m.data_layout = str(tm.target_data)
    # Numba's pipeline: function passes at O3, then module passes at O3
    for stage in ("function", "module"):
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        if stage == "function":
            fpm = pb.getFunctionPassManager()
            for f in m.functions:
                if not f.is_declaration:
                    fpm.run(f, pb)
        else:
            pb.getModulePassManager().run(m, pb)
    c_opt = time.process_time() - c2
    c3 = time.process_time()
    ee = llvm.create_mcjit_compiler(m, tm)
    ee.finalize_object()
    addr = ee.get_function_address("kernel")
    c_emit = time.process_time() - c3
    return ee, addr, dict(init=c_init, build=c_build, opt=c_opt, emit=c_emit)


# The kernel as jitorch generated it on 2026-12-06 for encoder1 (its module
# _jitorch_prog_f59069139938628f8d14ca5b), its output allocations made arguments and its shape
# checks (raises) left out, as on the direct side: a fixed copy, so the probe measures the same
# code whatever the generator does later.
NUMBA_SRC = '''
import numpy as np
def kernel(p0, p1, p2, p3, p4, out19, out20, out21, out23, out25, buf26):
    n1 = p0.shape[0] * (p2.shape[0] == 1) + p2.shape[0] * (p2.shape[0] != 1)
    n2 = p0.shape[1] * (p2.shape[1] == 1) + p2.shape[1] * (p2.shape[1] != 1)
    n3 = p0.shape[2] * (p1.shape[0] == 1) + p1.shape[0] * (p1.shape[0] != 1)
    n4 = n3 * (p2.shape[2] == 1) + p2.shape[2] * (p2.shape[2] != 1)
    n5 = n4 * (p3.shape[0] == 1) + p3.shape[0] * (p3.shape[0] != 1)
    n6 = n5 * (p4.shape[0] == 1) + p4.shape[0] * (p4.shape[0] != 1)
    m7 = int(p0.shape[0] != 1)
    m8 = int(p0.shape[1] != 1)
    m9 = int(p0.shape[2] != 1)
    m10 = int(p1.shape[0] != 1)
    m11 = int(p2.shape[0] != 1)
    m12 = int(p2.shape[1] != 1)
    m13 = int(p2.shape[2] != 1)
    m14 = int(p3.shape[0] != 1)
    m15 = int(p4.shape[0] != 1)
    m16 = int(n1 != 1)
    m17 = int(n2 != 1)
    m18 = int(n6 != 1)
    for i27 in range(n1):
        for i28 in range(n2):
            acc30 = np.float32(0.0)
            tot31 = 0.0
            for b32 in range((n6 + 511) // 512):
                lo33 = b32 * 512
                acc30 = np.float32(0.0)
                for jj34 in range(min(512, n6 - lo33)):
                    i29 = lo33 + jj34
                    x35 = p2[i27 * m11, i28 * m12, i29 * m13]
                    x36 = p0[i27 * m7, i28 * m8, i29 * m9]
                    x37 = p1[i29 * m10]
                    t38 = np.float32((x36) + (np.float32(1.0)) * (x37))
                    t39 = np.float32((x35) + (np.float32(1.0)) * (t38))
                    acc30 = acc30 + t39
                    buf26[i29] = t39
                    out19[i27 * m16, i28 * m17, i29 * m18] = t39
                tot31 = tot31 + np.float64(acc30)
            acc30 = np.float32(tot31)
            acc30 = acc30 / np.float32(n6)
            acc41 = np.float32(0.0)
            tot42 = 0.0
            for b43 in range((n6 + 511) // 512):
                lo44 = b43 * 512
                acc41 = np.float32(0.0)
                for jj45 in range(min(512, n6 - lo44)):
                    i29 = lo44 + jj45
                    b46 = buf26[i29]
                    t47 = np.float32((b46) - (np.float32(1.0)) * (acc30))
                    t48 = np.float32((t47) * (t47))
                    acc41 = acc41 + t48
                    buf26[i29] = t47
                    out20[i27 * m16, i28 * m17, i29 * m18] = t47
                    out21[i27 * m16, i28 * m17, i29 * m18] = t48
                tot42 = tot42 + np.float64(acc41)
            acc41 = np.float32(tot42)
            acc41 = acc41 / np.float32(n6)
            t50 = np.float32((acc41) + (np.float32(1.0)) * (np.float32(1e-05)))
            t51 = np.float32(np.float32(1.0) / np.sqrt((t50)))
            out23[i27 * m16, i28 * m17, 0] = t51
            for i29 in range(n6):
                b52 = buf26[i29]
                t53 = np.float32((b52) * (t51))
                x54 = p3[i29 * m14]
                t55 = np.float32((t53) * (x54))
                x56 = p4[i29 * m15]
                t57 = np.float32((t55) + (np.float32(1.0)) * (x56))
                out25[i27 * m16, i28 * m17, i29] = t57
'''


def _best_us(call, reps: int) -> float:
    best = 1e9
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(reps):
            call()
        best = min(best, (time.perf_counter() - t) / reps)
    return best * 1e6


def _flat(a):
    """A ctypes argument list of an array: its address, sizes and element strides."""
    return [a.ctypes.data, *a.shape, *(s // a.itemsize for s in a.strides)]


def main(which):
    rng = np.random.default_rng(0)
    p0, p2 = (rng.random((8, 16, 64), dtype=np.float32) for _ in range(2))
    p1, p3, p4 = (rng.random(64, dtype=np.float32) for _ in range(3))
    outs = [np.empty((8, 16, 64), np.float32) for _ in range(3)] + \
        [np.empty((8, 16, 1), np.float32), np.empty((8, 16, 64), np.float32),
         np.empty(64, np.float32)]
    empty = np.empty((0, 16, 64), np.float32)  # n1 == 0: the call's own overhead
    import numba  # both ways: each one's compile is timed after its imports
    if which == "numba":
        ns = {}
        exec(compile(NUMBA_SRC, "kernel", "exec"), ns)
        k = numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})(
            ns["kernel"])
        numba.njit(lambda a: a[0])(p1)  # Numba's one-time setup, outside the clock
        c = time.process_time()
        k(p0, p1, p2, p3, p4, *outs)
        comp = time.process_time() - c
        md = k.get_metadata(k.signatures[0])
        parts = {"llvm": round(md["timers"]["llvm_lock"], 3)}
        call = lambda: k(p0, p1, p2, p3, p4, *outs)  # noqa: E731
        idle = lambda: k(empty, p1, empty, p3, p4, *outs)  # noqa: E731
    else:
        c = time.process_time()
        ee, addr, parts = compile_direct()  # (ee: keeps the code alive)
        comp = time.process_time() - c
        parts = {k_: round(v, 3) for k_, v in parts.items()}
        cf = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] + [ctypes.c_int64] * 6 +
                                      [ctypes.c_void_p] + [ctypes.c_int64] * 2 +
                                      [ctypes.c_void_p] + [ctypes.c_int64] * 6 +
                                      ([ctypes.c_void_p] + [ctypes.c_int64] * 2) * 2 +
                                      [ctypes.c_void_p] * 6))(addr)
        rest = _flat(p3) + _flat(p4) + [o.ctypes.data for o in outs]
        argv = _flat(p0) + _flat(p1) + _flat(p2) + rest
        argz = _flat(empty) + _flat(p1) + _flat(empty) + rest
        call = lambda: cf(*argv)  # noqa: E731
        idle = lambda: cf(*argz)  # noqa: E731
        call()
    x = p2 + (p0 + p1)  # the reference, NumPy
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    r = 1 / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(outs[4], d * r * p3 + p4, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs[3], r, rtol=1e-4)
    run, over = _best_us(call, 300), _best_us(idle, 3000)
    print(f"{which}: compile {comp:.3f} CPU-s {parts}; run {run:.1f} us, of it the call "
          f"{over:.1f} us: the loops {run - over:.1f} us")


def driver(runs: int) -> None:
    import subprocess
    import platform
    print(f"bench/direct_llvm_kernel.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{platform.processor() or platform.machine()}, {runs} fresh processes per way")
    for _ in range(runs):
        for which in ("numba", "direct"):
            r = subprocess.run([sys.executable, __file__, "--child", which], capture_output=True,
                               text=True, check=True)
            print(r.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        main(sys.argv[2])
    else:
        driver(int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3)

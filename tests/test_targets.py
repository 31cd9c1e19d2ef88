"""The Target seam (script/codegen/target.py, script/targets/): a target is chosen by device,
its own lowering rules come before the common ones, fusion reads its capabilities from the graph,
and the device is part of a call's specialisation key."""
from __future__ import annotations

import numpy as np
import pytest

import jitorch
from jitorch import _dtype as dt
from jitorch.script.codegen import NotLowered, lowering
from jitorch.script.codegen.target import Target, device_of, get_target
from jitorch.script import ir
from jitorch.script.frontend.trace import trace_graph, value_type
from jitorch.script.passes import fuse
from jitorch.script.passes.capabilities import Capabilities
from jitorch.script.passes.types import specialize


# --- choosing a target ----------------------------------------------------------------------------
def test_the_cpu_target_is_chosen_by_device():
    cpu = get_target("cpu")
    assert cpu.name == "cpu" and get_target("cpu") is cpu
    assert dt.float32 in cpu.capabilities.dtypes and dt.complex64 not in cpu.capabilities.dtypes
    assert dt.complex64 in cpu.capabilities.complex_dtypes


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_devices_get_the_cuda_target_which_generates_host_entries(device):
    """Any cuda device compiles through the CUDA target (tests/test_cuda_target.py has its
    kernels): a graph typed on that device gives a host entry that launches a kernel."""
    from jitorch.script.passes import pipeline
    cuda = get_target(device)
    assert cuda.name == "cuda"
    g, _ = trace_graph(_chain, (jitorch.randn(3),))
    g = specialize(g, [ir.TensorType(dt.float32, (None,), "cuda:0")])
    g.capabilities = cuda.capabilities
    prog = cuda.generate(pipeline.run(g))
    assert "def entry(" in prog.source and "launch(" in prog.source and prog.kernels


def test_an_unknown_device_is_not_lowered():
    with pytest.raises(NotLowered, match="no code generator for device 'tpu'"):
        get_target("tpu")


def test_the_device_of_a_call_is_its_tensors_one():
    f32 = dt.float32
    assert device_of([ir.INT, ir.FLOAT]) == "cpu"
    assert device_of([ir.TensorType(f32, (None,), "cuda"), ir.INT]) == "cuda"
    assert device_of([ir.ListType(ir.TensorType(f32, (None,), "cuda:1"))]) == "cuda:1"
    with pytest.raises(NotLowered, match=r"several devices \(cpu, cuda\)"):
        device_of([ir.TensorType(f32, (None,)), ir.TupleType([ir.TensorType(f32, (), "cuda")])])


# --- the lowering table ---------------------------------------------------------------------------
class _Fake(Target):
    name = "fake"
    capabilities = Capabilities(dtypes=frozenset({dt.float32}))


def test_a_targets_own_rule_comes_before_the_common_one(monkeypatch):
    lowering.table("cpu")  # the CPU rules are registered before the table is swapped
    monkeypatch.setattr(lowering, "TABLE", {})

    @lowering.lowers("test::a", "test::b")
    def common(em, n):
        pass

    @lowering.lowers("test::a", target="fake")
    def own(em, n):
        pass

    fake, cpu = _Fake(), get_target("cpu")
    assert lowering.lowering_for("test::a", fake) is own
    assert lowering.lowering_for("test::b", fake) is common
    assert lowering.lowering_for("test::a", cpu) is common  # another target's rule is not seen
    assert lowering.table(fake) == {"test::a": own, "test::b": common}
    with pytest.raises(ValueError, match="two lowerings for target fake"):
        lowering.lowers("test::a", target="fake")(lambda em, n: None)


def test_every_cpu_lowering_is_registered_for_the_cpu_target():
    """A rule of targets/cpu registered as common would be offered to every other target."""
    lowering.table("cpu")
    where = {(op, t): fn.__module__ for (op, t), fn in lowering.TABLE.items()}
    cpu = {k for k, m in where.items() if m.startswith("jitorch.script.targets.cpu.")}
    assert cpu and all(t == "cpu" for _, t in cpu)


# --- fusion reads the target's capabilities -------------------------------------------------------
def _chain(x):
    return ((x * 2 + 1).tanh() - x).sigmoid()


def _typed(fn, *args, caps=None):
    g, _ = trace_graph(fn, args)
    sg = specialize(g, [value_type(a) for a in args])
    sg.capabilities = caps
    return sg


def _fused(g):
    return [n for n in g.nodes() if n.op == "prim::Fused"]


@pytest.mark.parametrize("dtype", [jitorch.float32, jitorch.float64])
def test_fusion_groups_only_the_dtypes_the_target_lowers(dtype):
    x = jitorch.randn(3, 4, dtype=dtype)
    assert _fused(fuse.run(_typed(_chain, x, caps=get_target("cpu").capabilities)))
    f32_only = Capabilities(dtypes=frozenset({dt.bool, dt.int64, dt.float32}))
    assert bool(_fused(fuse.run(_typed(_chain, x, caps=f32_only)))) == (dtype is jitorch.float32)


def test_fusion_forms_row_regions_and_prologues_only_where_the_target_lowers_them():
    x = jitorch.randn(3, 4)

    def softmax(x):
        return jitorch.softmax(x * 2, -1)

    def prologue(x):
        return (x * 2).exp().sum(-1)

    cpu = get_target("cpu").capabilities
    rows = [n for n in _fused(fuse.run(_typed(softmax, x, caps=cpu)))
            if n.attrs.get("kind") == "rows"]
    assert rows
    no_rows = Capabilities(cpu.dtypes, cpu.complex_dtypes, row_regions=False)
    assert not [n for n in _fused(fuse.run(_typed(softmax, x, caps=no_rows)))
                if n.attrs.get("kind") == "rows"]

    def ops(g):
        return [n.attrs.get("ops", "") for n in _fused(g)]
    assert any(o.endswith("-> sum") for o in ops(fuse.run(_typed(prologue, x, caps=cpu))))
    no_prologue = Capabilities(cpu.dtypes, cpu.complex_dtypes, reduction_prologues=False)
    assert not any(o.endswith("-> sum")
                   for o in ops(fuse.run(_typed(prologue, x, caps=no_prologue))))


def test_fusion_refuses_a_graph_that_names_no_target():
    with pytest.raises(ValueError, match="names no target"):
        fuse.run(_typed(_chain, jitorch.randn(3)))


# --- the device in the specialisation key ---------------------------------------------------------
def test_a_tensor_on_another_device_gets_its_own_specialisation():
    """The fast key and the checked key both read the device: a tensor on a cuda device never
    reuses the CPU program; mixing devices runs interpreted (eager raises or lifts 0-d
    tensors), and all-cuda arguments get the CUDA target's program (a host entry)."""
    @jitorch.script
    def f(x, y):
        return (x * y + 1).tanh()

    x, y = jitorch.randn(4, 3), jitorch.randn(4, 3)
    expected = f(x, y)
    assert f(x, y).allclose(expected)  # (the fast path is made)
    before = dict(jitorch.jit.stats()["interpreted_reasons"])
    _fake_cuda = jitorch.device("cuda", 0)  # (a device value; the data stays a NumPy array)
    xc = x.clone()
    xc._device = _fake_cuda
    assert f(xc, y).allclose(expected)
    after = jitorch.jit.stats()["interpreted_reasons"]
    new = {r: n - before.get(r, 0) for r, n in after.items() if n != before.get(r, 0)}
    assert list(new) == ["not lowered: arguments on several devices (cpu, cuda:0)"]
    yc = y.clone()
    yc._device = _fake_cuda
    from jitorch.script.runtime import programs
    from jitorch.script.runtime.keys import _arg_type
    # (the program is generated, not run: this process has no cuda device to run it on)
    _, prog, reason = programs._lower(f.graph, [_arg_type(a, None, False) for a in (xc, yc)])
    assert reason is None and "targets.cuda.launch import" in prog.source
    keys = {k for k in f._cache}
    assert len(keys) == 2
    assert np.allclose(f(x, y).numpy(), expected.numpy())

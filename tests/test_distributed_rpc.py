"""jitorch.distributed.rpc, dist_autograd and DistributedOptimizer: real MPI jobs of 3 workers
(each under a timeout): calls with tensors and values, RRefs and their proxies, async_execution,
errors and timeouts, the profiler's RPC ranges, hostile messages refused without running code,
and a model split over two remote workers trained with dist_autograd + DistributedOptimizer
matching local optim.SGD exactly. Plus jitorch.futures and the name rule, in process."""
import pytest

from dist_jobs import mpi_job, ok_lines

CALLS = r'''
import os, sys, time
import jitorch
import jitorch.distributed.rpc as rpc
from jitorch.futures import Future
from mpi4py import MPI


def add(a, b):
    return a + b


def describe(d, t):
    return {"keys": sorted(d), "sum": t.sum(), "me": rpc.get_worker_info().name,
            "shape": tuple(t.shape), "dtype": t.dtype}


class Box:
    def __init__(self, v):
        self.v = v

    def get(self, k=1):
        return self.v * k

    def grow(self, t):
        self.v = self.v + t
        return self.v


def owner_sum(rref):
    return rref.local_value().v.sum()


def fail():
    raise ValueError("boom from the callee")


def slow(s):
    time.sleep(s)
    return s


@rpc.functions.async_execution
def chained(x):
    return rpc.rpc_async("worker2", add, args=(x, 1)).then(lambda f: f.value() * 2)


@jitorch.jit.script
def scripted(x, y):
    return (x * y + 1.0).sum(1)


class Evil:  # never allowed: its code must never run from a message
    def __setstate__(self, state):
        open(os.path.join(sys.argv[1], "evil-ran"), "w").close()


r = MPI.COMM_WORLD.Get_rank()  # before init_rpc, under either MPI
rpc.init_rpc(f"worker{r}", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
    num_worker_threads=1 if r == 2 else 4, rpc_timeout=30))
assert rpc.get_worker_info().name == f"worker{r}" and rpc.get_worker_info().id == r
if r == 0:
    x = jitorch.arange(12.).reshape(3, 4)
    # tensors (non-contiguous, other dtypes) and plain values, both ways
    y = rpc.rpc_sync("worker1", add, args=(x.t(), x.t()))
    assert jitorch.equal(y, 2 * x.t())
    h = rpc.rpc_sync(2, add, args=(jitorch.ones(3, dtype=jitorch.bfloat16),
                                   jitorch.arange(3).to(jitorch.bfloat16)))
    assert h.dtype is jitorch.bfloat16 and h.tolist() == [1.0, 2.0, 3.0]
    d = rpc.rpc_sync(rpc.get_worker_info("worker1"), describe,
                     args=({"b": 1, "a": None}, jitorch.arange(6, dtype=jitorch.int64)))
    assert d["keys"] == ["a", "b"] and d["sum"].item() == 15 and d["me"] == "worker1"
    assert d["shape"] == (6,) and d["dtype"] is jitorch.int64
    assert rpc.rpc_sync("worker2", add, kwargs={"a": "x", "b": "y"}) == "xy"
    fut = rpc.rpc_async("worker2", add, args=(3, 4))
    assert isinstance(fut, Future) and fut.wait() == 7 and fut.done() and fut.value() == 7
    assert fut.then(lambda f: f.value() + 1).wait() == 8
    assert rpc.rpc_sync("worker1", chained, args=(jitorch.tensor(2.),)).item() == 6.0
    got = rpc.rpc_sync("worker1", scripted, args=(x, x))
    assert jitorch.allclose(got, (x * x + 1).sum(1))
    print("[OK calls]")
    # RRefs: remote, to_here, the proxies, RRefs as arguments, local_value on the owner
    rr = rpc.remote("worker1", Box, args=(jitorch.ones(3),))
    assert not rr.is_owner() and rr.owner() == rpc.get_worker_info("worker1")
    assert rr.owner_name() == "worker1"
    assert jitorch.equal(rr.rpc_sync().get(k=3), jitorch.full((3,), 3.))
    assert rr.rpc_async().get(2).wait().tolist() == [2.0] * 3
    assert rr.remote().get(5).to_here().tolist() == [5.0] * 3
    rr.rpc_sync().grow(jitorch.ones(3))
    assert rpc.rpc_sync("worker1", owner_sum, args=(rr,)).item() == 6.0
    with jitorch.serialization.safe_globals([Box]):  # a Box copy comes back: allow the class
        assert rr.to_here().v.tolist() == [2.0] * 3
    mine = rpc.RRef(jitorch.arange(3.))
    assert mine.is_owner() and mine.to_here() is mine.local_value()
    assert rpc.rpc_sync("worker2", add, args=(mine.to_here(), 1)).tolist() == [1., 2., 3.]
    try:
        rr.local_value()
        raise AssertionError("local_value on a user")
    except RuntimeError as e:
        assert "Call it on owner" in str(e)
    print("[OK rref]")
    # errors: the callee's type and message; timeouts name the call
    try:
        rpc.rpc_sync("worker1", fail)
        raise AssertionError("no error")
    except ValueError as e:
        assert "boom from the callee" in str(e) and "worker1" in str(e)
    try:
        rpc.rpc_sync("worker1", slow, args=(1.0,), timeout=0.2)
        raise AssertionError("no timeout")
    except RuntimeError as e:
        assert "ran for more than set timeout (200 ms)" in str(e) and "slow" in str(e), e
    try:
        rpc.rpc_async("worker2", slow, args=(1.0,), timeout=0.2).wait()
        raise AssertionError("no timeout")
    except RuntimeError as e:
        assert "rpc_async#slow(worker0 -> worker2)" in str(e), e
    try:
        rpc.rpc_sync("worker1", lambda: 1)
        raise AssertionError("a lambda was sent")
    except TypeError as e:
        assert "by importable name" in str(e) or "lambda" in str(e)
    print("[OK errors]")
    # the profiler records each call as a range
    with jitorch.profiler.profile() as prof:
        rpc.rpc_sync("worker1", add, args=(1, 2))
        rpc.rpc_async("worker2", add, args=(1, 2)).wait()
    names = [e.name for e in prof.events()]
    assert "rpc_sync#add(worker0 -> worker1)" in names, names
    assert "rpc_async#add(worker0 -> worker2)" in names, names
    print("[OK profiler]")

    # hostile messages, sent as raw bytes: each is refused with an error, none runs code
    from jitorch.distributed.rpc import api, wire
    agent = api._agent()
    marker = sys.argv[1]

    def raw(make, what):
        return agent.send_message(1, make, what, 30)

    def crafted(env, obj=None, storages=(), table=None):
        manifest = {"format": "jitorch.rpc", "version": 1, "storages": table or [],
                    "object": obj, "rpc": env}
        return lambda cid: wire.pack(cid, manifest, list(storages))

    def call_env(fn):
        return {"op": "call", "fn": fn, "cid": None}

    args = {"$": "dict", "items": [["args", {"$": "tuple", "items": [
        f"touch {marker}/os-ran"]}], ["kwargs", {"$": "dict", "items": []}]]}
    cases = [
        (call_env("__main__:no_such_function"), args, "no such function"),
        (call_env("os:system"), args, "standard library"),
        (call_env("builtins:eval"), args, "standard library"),
        (call_env("subprocess:call"), args, "standard library"),
        (call_env("__main__:add.__globals__"), args, "no dunders"),
        (call_env("evilmod:run"), args, "not imported"),
        (call_env("jitorch.serialization:save"), args, "only the tensor API"),
        (call_env("__main__:Evil"), {"$": "dict", "items": [["args", {"$": "tuple", "items": [
            {"$": "object", "id": 0, "module": "__main__", "qualname": "Evil",
             "state": {"$": "dict", "items": []}}]}], ["kwargs", {"$": "dict", "items": []}]]},
         "Unsupported global: GLOBAL __main__.Evil"),
        (call_env("__main__:add"), {"$": "dict", "items": [["args", {"$": "tuple", "items": [
            {"$": "global", "module": "os", "qualname": "system"}, 1]}],
            ["kwargs", {"$": "dict", "items": []}]]}, "Unsupported global: GLOBAL os.system"),
        ({"op": "exec", "cid": None}, None, "operation 'exec', which does not exist"),
        ({"op": "method", "rref": rr._id, "method": "__class__", "cid": None}, args,
         "not a plain method name"),
    ]
    for env, obj, want in cases:
        try:
            raw(crafted(env, obj), "hostile").wait()
            raise AssertionError(f"accepted: {env}")
        except Exception as e:
            assert want in str(e), (want, str(e))
    for fn, want in (("os:system", "standard library"), ("__main__:add.__globals__", "dunders")):
        try:  # the binary form: the same name checks
            raw(lambda cid: wire.pack_call(cid, fn, 0, (f"touch {marker}/os-ran",)),
                "hostile").wait()
            raise AssertionError(f"accepted: {fn}")
        except RuntimeError as e:
            assert want in str(e), (want, str(e))
    # a tensor claiming more bytes than its storage has; bytes that are not a message
    import numpy as np
    t_node = {"$": "tensor", "id": 0, "storage": 0, "dtype": "float32", "shape": [1000],
              "stride": [1], "byte_offset": 0, "requires_grad": False}
    bad = [crafted(call_env("__main__:add"), t_node, [np.zeros(4, np.float32)],
                   [{"dtype": "float32", "numel": 4}]),
           crafted(call_env("__main__:add"), t_node, [np.zeros(4, np.float32)],
                   [{"dtype": "float32", "numel": 1000}]),
           lambda cid: np.concatenate([np.array([cid, 0, 50], np.uint64).view(np.uint8),
                                       np.frombuffer(b"{not json" * 10, np.uint8)]),
           lambda cid: wire._frame(cid, wire.pack_call(cid, "__main__:add", 0, (1, 2))[24:-1],
                                   [])]  # a binary call cut short
    for make in bad:
        try:
            raw(make, "malformed").wait()
            raise AssertionError("a malformed message was accepted")
        except RuntimeError as e:
            assert "not a valid message" in str(e) or "message" in str(e), str(e)
    # a reply tag past MPI's bound: answered on the answers' tag (the callee serves on)
    assert raw(lambda cid: wire.pack_call(cid, "__main__:add", 0xFFFFFFFF, (2, 3)),
               "tag").wait() == 5
    assert rpc.rpc_sync("worker1", add, args=(2, 3)) == 5  # the callee still serves
    assert not [f for f in os.listdir(marker) if f.endswith("ran")], os.listdir(marker)
    print("[OK hostile]")
rpc.shutdown()
assert "evilmod" not in sys.modules
print(f"[OK shutdown {r}]")
'''

EVILMOD = 'import os, sys\nopen(os.path.join(sys.argv[1], "import-ran"), "w").close()\n'


def test_rpc_calls_rrefs_errors_profiler_and_hostile_messages(tmp_path):
    (tmp_path / "evilmod.py").write_text(EVILMOD)  # importing it would leave a mark
    marks = tmp_path / "marks"
    marks.mkdir()
    p = mpi_job(tmp_path, CALLS, 3, marks, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK calls", "OK errors", "OK hostile", "OK profiler", "OK rref",
                           "OK shutdown 0", "OK shutdown 1", "OK shutdown 2"], p.stdout
    assert list(marks.iterdir()) == []


TRAIN = r'''
import os
import jitorch
import jitorch.distributed.autograd as dist_autograd
import jitorch.distributed.rpc as rpc
from jitorch import nn, optim
from jitorch.distributed.optim import DistributedOptimizer
from mpi4py import MPI


def stage1():
    jitorch.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh())


def stage2():
    jitorch.manual_seed(2)
    return nn.Linear(6, 2)


def param_rrefs(module_rref):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters()]


def params(module_rref):
    return [p.detach().clone() for p in module_rref.local_value().parameters()]


def grads(module_rref, cid):
    g = dist_autograd.get_gradients(cid)
    ps = list(module_rref.local_value().parameters())
    assert all(p.grad is None for p in ps)  # gradients stay in the context
    return [g[p] for p in ps]


r = MPI.COMM_WORLD.Get_rank()  # before init_rpc, under either MPI
rpc.init_rpc(f"worker{r}")
if r == 0:
    # the local run first: its optimizer step compiles here, and the owners then load it from
    # the disk cache instead of compiling it too
    local1, local2 = stage1(), stage2()
    local_params = list(local1.parameters()) + list(local2.parameters())
    # one optimizer per stage, as on the owners: the same compiled steps
    local_opts = [optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (local1, local2)]
    jitorch.manual_seed(0)
    batches = [(jitorch.randn(5, 4), jitorch.randn(5, 2)) for _ in range(3)]
    expected = []
    for x, y in batches:
        for o in local_opts:
            o.zero_grad()
        local_loss = ((local2(local1(x)) - y) ** 2).mean()
        local_loss.backward()
        for o in local_opts:
            o.step()
        expected.append((local_loss, [p.grad.clone() for p in local_params],
                         [p.detach().clone() for p in local_params]))

    s1 = rpc.remote("worker1", stage1)
    s2 = rpc.remote("worker2", stage2)
    opt = DistributedOptimizer(optim.SGD, rpc.rpc_sync("worker1", param_rrefs, args=(s1,)) +
                               rpc.rpc_sync("worker2", param_rrefs, args=(s2,)),
                               lr=0.1, momentum=0.9)
    for it, ((x, y), (local_loss, local_grads, local_after)) in enumerate(zip(batches,
                                                                              expected)):
        with dist_autograd.context() as cid:
            h = s1.rpc_sync().forward(x)           # worker1 -> here -> worker2 -> here
            out = s2.rpc_sync().forward(h)
            loss = ((out - y) ** 2).mean()
            dist_autograd.backward(cid, [loss])
            assert dist_autograd.get_gradients(cid) == {}  # no parameter lives here
            remote_grads = rpc.rpc_sync("worker1", grads, args=(s1, cid)) + \
                rpc.rpc_sync("worker2", grads, args=(s2, cid))
            opt.step(cid)
        assert jitorch.equal(loss, local_loss), (it, loss, local_loss)
        for g, want in zip(remote_grads, local_grads):
            assert jitorch.equal(g, want), (it, g, want)
        trained = rpc.rpc_sync("worker1", params, args=(s1,)) + \
            rpc.rpc_sync("worker2", params, args=(s2,))
        for a, b in zip(trained, local_after):
            assert jitorch.equal(a, b), (it, a, b)
    try:
        dist_autograd.get_gradients(cid)
        raise AssertionError("the context outlived its block")
    except RuntimeError as e:
        assert "Could not find autograd context" in str(e)
    print("[OK trained]")
rpc.shutdown()
print(f"[OK {r}]")
'''


def test_remote_model_trained_with_dist_autograd_matches_local_sgd_exactly(tmp_path):
    p = mpi_job(tmp_path, TRAIN, 3, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK 0", "OK 1", "OK 2", "OK trained"], p.stdout


def test_futures_then_value_and_collect_all():
    import jitorch
    from jitorch.futures import Future, collect_all, wait_all
    f = Future()
    chained = f.then(lambda fut: fut.value() * 2)
    with pytest.raises(RuntimeError, match="has not been marked completed"):
        f.value()
    assert not f.done()
    f.set_result(21)
    assert f.done() and f.value() == 21 and chained.wait() == 42
    bad = Future()
    after = bad.then(lambda fut: fut.value())
    bad.set_exception(ValueError("no"))
    with pytest.raises(ValueError, match="no"):
        after.wait()
    fs = [Future() for _ in range(3)]
    allf = collect_all(fs)
    for i, x in enumerate(fs):
        x.set_result(i)
    assert allf.wait() == fs and wait_all(fs) == [0, 1, 2]
    assert isinstance(jitorch.jit.fork(lambda: 1), Future)  # torch.jit.Future is this class


@pytest.mark.parametrize("name, why", [
    ("os:system", "standard library"), ("builtins:exec", "standard library"),
    ("pickle:loads", "standard library"), ("jitorch.distributed._work:abort_job",
                                           "only the tensor API"),
    ("jitorch:__class__", "no dunders"), ("numpy:save", "installed package"),
    ("jitorch", "module:qualname"), ("x-y:f", "not a dotted name")])
def test_message_names_refused(name, why):
    import numpy  # noqa: F401 - imported: refused for what it is, not for being absent
    import jitorch.distributed._work  # noqa: F401
    from jitorch.distributed.rpc import wire
    with pytest.raises(RuntimeError, match=why):
        wire.resolve(name)


def test_message_names_of_the_tensor_api_resolve():
    import jitorch
    from jitorch.distributed.rpc import wire
    for fn in (jitorch.add, jitorch.ones, jitorch.nn.functional.relu, jitorch.nn.Linear,
               jitorch.optim.SGD):
        assert wire.resolve(wire.qualified_name(fn)) is fn


def test_resolved_names_are_remembered_and_refused_again_once_they_change(monkeypatch):
    import os
    import sys
    import types
    from jitorch.distributed.rpc import wire
    mod = types.ModuleType("rpc_names_mod")  # a module of the program (no installed file)
    exec("def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\nclass C:\n"
         "    @staticmethod\n    def m():\n        return 3\n", vars(mod))
    monkeypatch.setitem(sys.modules, "rpc_names_mod", mod)
    f, C = mod.f, mod.C
    for _ in range(2):  # resolved, then found among the names resolved before
        assert wire.resolve("rpc_names_mod:f") is f
        assert wire.resolve("rpc_names_mod:C.m") is C.__dict__["m"].__func__
    assert "rpc_names_mod:f" in wire._RESOLVED and "rpc_names_mod:C.m" in wire._RESOLVED

    def refused(name, why):
        with pytest.raises(RuntimeError, match=why):
            wire.resolve(name)
    mod.f = os.system  # the name now finds what a message may not call
    refused("rpc_names_mod:f", "RPC calls only Python functions")
    mod.f = mod.g  # ... a function defined under another name
    refused("rpc_names_mod:f", "defined elsewhere")
    mod.f = f
    f.__qualname__ = "g"  # ... the same function, renamed
    refused("rpc_names_mod:f", "defined elsewhere")
    f.__qualname__ = "f"
    assert wire.resolve("rpc_names_mod:f") is f
    del C.m
    refused("rpc_names_mod:C.m", "no such function")
    monkeypatch.setitem(sys.modules, "rpc_names_mod", types.ModuleType("rpc_names_mod"))
    refused("rpc_names_mod:f", "no such function")  # another module under that name
    monkeypatch.delitem(sys.modules, "rpc_names_mod")
    refused("rpc_names_mod:f", "not imported")


def test_compact_messages_round_trip_and_refuse_what_is_not_a_value():
    import numpy as np
    import jitorch
    from jitorch.distributed.rpc import agent, wire
    x = jitorch.arange(12.).reshape(3, 4)
    payload = {"args": (1, -2.5, "s", None, True, [1, (2, 3)], {"k": x.t()},
                        jitorch.tensor(7, dtype=jitorch.int64),
                        jitorch.ones(2, dtype=jitorch.bfloat16)), "kwargs": {}}
    manifest, storages = agent.encode_compact(payload)
    assert "c" in manifest  # plain values and tensors: the compact form
    manifest["rpc"] = {"op": "call"}
    buf = np.frombuffer(wire.pack(9, manifest, storages), np.uint8).copy()
    call_id, got_manifest, buffers = wire.unpack(buf)
    got, _ = agent.decode(got_manifest, buffers, "test")
    a = got["args"]
    assert call_id == 9 and a[:6] == (1, -2.5, "s", None, True, [1, (2, 3)])
    assert type(a[5]) is list and type(a[5][1]) is tuple and got["kwargs"] == {}
    assert jitorch.equal(a[6]["k"], x.t()) and a[7].item() == 7 and a[7].dtype is jitorch.int64
    assert a[8].dtype is jitorch.bfloat16 and a[8].tolist() == [1.0, 1.0]
    # what only the general form keeps: a tensor twice (one object), grads, nan, other types
    for general in ((x, x), (x, x[0]), jitorch.ones(2, requires_grad=True), float("nan"),
                    {1: 2}, jitorch.float32, {"a": (1, 2, {3})}):
        assert agent.encode_compact(general) == (None, None), general
    # a compact manifest builds only values: anything else is refused, naming the defect
    four = [np.zeros(16, np.uint8)]
    for tree, why in (({"t": [0, "float32", [5]]}, "buffer holds 16 bytes"),
                      ({"t": [1, "float32", [4]]}, "malformed tensor"),
                      ({"t": [0, "object", [4]]}, "malformed tensor"),
                      ({"t": [0, "float32", [-4]]}, "malformed tensor"),
                      ({"$": "global", "module": "os", "qualname": "system"}, "not a value"),
                      ({"l": [1], "d": {}}, "not a value"),
                      (["x"] * 3 + [{"l": [{"l": [{"l": [None]}]}]}], None)):
        if why is None:  # nesting is fine within bounds
            agent.decode({"c": tree}, four, "test")
            continue
        with pytest.raises(RuntimeError, match=why):
            agent.decode({"c": tree}, four, "test")
    deep = None
    for _ in range(100):
        deep = {"l": [deep]}
    with pytest.raises(RuntimeError, match="nests too deep"):
        agent.decode({"c": deep}, [], "test")


def _binary(pack, *args):
    """(call id, manifest, storages) of a binary message read back."""
    import numpy as np
    from jitorch.distributed.rpc import wire
    buf = np.frombuffer(pack(9, *args), np.uint8).copy()
    return wire.unpack(buf) + (buf,)


def test_binary_messages_round_trip_every_dtype_shape_and_value():
    import math
    import numpy as np
    import jitorch
    from jitorch.distributed.rpc import agent, wire
    from jitorch.serialization import _DTYPES
    base = jitorch.arange(24.).reshape(2, 3, 4) % 3
    for d in _DTYPES.values():
        x = base.to(d)
        for t in (x, x.transpose(0, 2), x[:, ::2, 1], x[0, 1, 2], x[:0]):
            _, manifest, _, buf = _binary(wire.pack_call, "m:f", 17, (t, 5))
            assert manifest == {"rpc": {"op": "call", "fn": "m:f", "cid": None, "reply": 17}}
            got, _ = agent.decode(manifest, None, "test")
            g = got["args"][0]
            assert got["args"][1] == 5 and got["kwargs"] == {}
            assert g.dtype is d and g.shape == t.shape and jitorch.equal(g, t), (d, t.shape)
            assert not t.numel() or np.shares_memory(g._data, buf)  # a view of the message
    values = (None, True, False, -(1 << 63), (1 << 63) - 1, -2.5, math.inf, "é ✓", "")
    _, manifest, _, _ = _binary(wire.pack_call, "m:f", 0, values)
    assert manifest["rpc"] == {"op": "call", "fn": "m:f", "cid": None}  # reply 0: none asked
    got = manifest.value["args"]
    assert got == values and [type(v) for v in got] == [type(v) for v in values]
    nan = _binary(wire.pack_value, float("nan"))[1].value
    assert type(nan) is float and math.isnan(nan)
    y = jitorch.ones(2, 3)
    for value in (y, (y, 1, None), ()):
        _, manifest, _, _ = _binary(wire.pack_value, value)
        assert manifest == {"rpc": {"ok": True}}
        got = manifest.value
        assert type(got) is type(value) and jitorch.equal(
            got if type(got) is not tuple else got[0] if got else y, y)
    # what it does not carry takes the JSON forms
    for value in ([1], {"a": 1}, 1 << 63, jitorch.float32, (y, y), (y, y[0]),
                  jitorch.ones(2, requires_grad=True), "\ud800", (0,) * 256):
        with pytest.raises(wire.NotCompact):
            wire.pack_value(1, value)


def test_malformed_binary_messages_are_refused():
    import numpy as np
    import jitorch
    from jitorch.distributed.rpc import wire
    good = wire.pack_call(1, "m:f", 17, (jitorch.ones(4), 3))
    head_at, n = 32, int.from_bytes(good[16:24], "little")  # (after one storage size)
    assert good[head_at] == 1 and n == 8 + 3 + 11 + 9

    def refused(head, storages, why):
        buf = np.frombuffer(wire._frame(1, head, storages), np.uint8).copy()
        with pytest.raises(wire.MessageError, match=why):
            wire.unpack(buf)
    head = good[head_at:head_at + n]
    four = [np.ones(4, np.float32)]
    refused(head[:-3], four, "past its end")  # cut short
    refused(head + b"N", four, "1 bytes after its items")
    refused(head, four * 2, "carries 2 storages and its items use 1")
    refused(head, [np.ones(5, np.float32)], "buffer holds 20 bytes")
    refused(head[:-9] + b"?", four, "unknown code 63")  # the int's code byte replaced
    refused(head[:8] + b"\xff\xfe\xfd" + head[11:], four, "not UTF-8")  # the name
    refused(head[:2] + b"\xff" + head[3:], four, "past its manifest")  # its name length
    t_at = 8 + 3
    refused(head[:t_at + 1] + b"\xee" + head[t_at + 2:], four, "dtype code 238")
    dims = head[:t_at + 2] + bytes([65]) + bytes(8 * 65) + head[t_at + 11:]
    refused(dims, [np.ones(0, np.float32)], "65 dimensions")
    neg = head[:t_at + 3] + (-4).to_bytes(8, "little", signed=True) + head[t_at + 11:]
    refused(neg, four, "negative size")
    refused(bytes([2, 2, ord("N"), ord("N")]), [], "holds 2 values, not one")
    refused(bytes([3, 5, ord("N")]), [], "past its end")


SERVING = r'''
import os, threading, time
import jitorch
import jitorch.distributed.rpc as rpc
from mpi4py import MPI

meet = threading.Barrier(2, timeout=20)


def rendezvous(i):  # returns only when two calls run at once on this worker
    meet.wait()
    return i


def ping(n):
    return n if n == 0 else rpc.rpc_sync("worker0", pong, args=(n - 1,))


def pong(n):  # worker0 <-> worker1, each serving while its own call waits on the other
    return n if n == 0 else rpc.rpc_sync("worker1", ping, args=(n - 1,)) + 1


def via_async(x):  # waits, in a callee, for an answer the prober must receive
    return rpc.rpc_async("worker1", echo, args=(x,)).wait() * 2


def echo(x):
    return x


def slow(s):
    time.sleep(s)
    return s


r = MPI.COMM_WORLD.Get_rank()  # before init_rpc, under either MPI
rpc.init_rpc(f"worker{r}", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
    num_worker_threads=1 if r == 2 else 4, rpc_timeout=30))
if r in (0, 2):  # two callers at once: worker1 serves both together
    assert rpc.rpc_sync("worker1", rendezvous, args=(r,)) == r
    print(f"[OK parallel {r}]")
if r == 0:
    assert rpc.rpc_sync("worker1", ping, args=(4,)) == 2
    assert rpc.rpc_sync("worker2", via_async, args=(jitorch.ones(3),)).tolist() == [2.0] * 3
    print("[OK nested]")
    # a timed-out synchronous call: its late answer is dropped, the next call works
    try:
        rpc.rpc_sync("worker2", slow, args=(0.5,), timeout=0.1)
        raise AssertionError("no timeout")
    except RuntimeError as e:
        assert "ran for more than set timeout (100 ms)" in str(e), e
    x = jitorch.arange(4.)
    assert rpc.rpc_sync("worker2", echo, args=((x, [x[1:], {"n": 1}]),)) is not None
    time.sleep(0.6)
    got = rpc.rpc_sync("worker2", echo, args=((x, [x[1:], {"n": 1}]),))
    assert got[0].tolist() == [0, 1, 2, 3] and got[1][0].tolist() == [1, 2, 3], got
    print("[OK late]")
rpc.shutdown()
'''


def test_serving_threads_serve_nested_parallel_and_late_calls(tmp_path):
    p = mpi_job(tmp_path, SERVING, 3, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ok_lines(p) == ["OK late", "OK nested", "OK parallel 0", "OK parallel 2"], p.stdout

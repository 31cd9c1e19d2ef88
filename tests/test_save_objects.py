"""Whole objects through `jitorch.save`/`jitorch.load` without pickle (serialization_objects):
modules, plain objects, class/function values and NumPy arrays round-trip; loading follows
PyTorch 2.6's weights-only model (allow-list, `pickle.UnpicklingError` with PyTorch's text,
`weights_only=False` imports); a hostile archive never calls what it names."""
import argparse
import collections
import io
import json
import pickle
import sys
import warnings
import zipfile

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch import serialization as S

from fuzz_objects import archive as _archive

CALLS = []


def sentinel(*args, **kwargs):
    """A callable a hostile archive names; the tests check it is never called."""
    CALLS.append(args)
    return 0


class Recorder:
    inits = 0

    def __init__(self):
        Recorder.inits += 1
        self.v = 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4))
        self.head = nn.Linear(4, 2)
        self.register_buffer("scale", jitorch.tensor([2.0, -1.0]))
        self.register_buffer("tmp", jitorch.zeros(1), persistent=False)
        self.label = "net"
        self.sizes = (3, 4, 2)
        self.act = F.relu

    def forward(self, x):
        return self.head(self.act(self.body(x))) * self.scale


NET_GLOBALS = [Net, nn.Sequential, nn.Linear, nn.Tanh, F.relu]


def _bytes(obj) -> bytes:
    buf = io.BytesIO()
    jitorch.save(obj, buf)
    return buf.getvalue()


def _path(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


@pytest.fixture(autouse=True)
def _clean_globals():
    jitorch.serialization.clear_safe_globals()
    CALLS.clear()
    yield
    jitorch.serialization.clear_safe_globals()


def test_module_roundtrip_weights_only_false():
    # (seed 1: with PyTorch's numbers for seed 0, every ReLU input is negative and no
    # gradient reaches `head`)
    jitorch.manual_seed(1)
    m = Net()
    x = jitorch.randn(5, 3)
    data = _bytes(m)
    m2 = jitorch.load(io.BytesIO(data), weights_only=False)
    assert type(m2) is Net and type(m2.body) is nn.Sequential and m2 is not m
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    assert m2.label == "net" and m2.sizes == (3, 4, 2) and m2.act is F.relu
    assert set(m2.state_dict()) == set(m.state_dict())  # "tmp" stays non-persistent
    assert m2._non_persistent_buffers_set == {"tmp"} and "tmp" in m2._buffers
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m2.parameters())
    # it trains: grads reach the loaded parameters and a step changes them
    opt = jitorch.optim.SGD(m2.parameters(), lr=0.1)
    before = m2.head.weight.detach().clone()
    m2(x).sum().backward()
    opt.step()
    assert not jitorch.equal(before, m2.head.weight.detach())


def test_eval_mode_and_paths(tmp_path):
    m = Net().eval()
    path = tmp_path / "model.pt"
    jitorch.save(m, path)
    m2 = jitorch.load(path, weights_only=False)
    assert m2.training is False and m2.body[0].training is False
    m3 = jitorch.load(str(path), weights_only=False, map_location="cpu")
    assert jitorch.equal(m3.head.bias, m.head.bias)


def test_refused_by_default_with_pytorchs_message():
    data = _bytes(Net())
    with pytest.raises(pickle.UnpicklingError) as ei:
        jitorch.load(io.BytesIO(data))  # weights_only defaults to True, as in PyTorch 2.6
    p = _path(Net)
    msg = str(ei.value)
    assert msg.startswith("Weights only load failed. This file can still be loaded")
    assert (f"WeightsUnpickler error: Unsupported global: GLOBAL {p} was not an allowed global "
            f"by default. Please use `torch.serialization.add_safe_globals([{p}])` or the "
            f"`torch.serialization.safe_globals([{p}])` context manager to allowlist this "
            "global if you trust this class/function.") in msg
    assert "Re-running `torch.load` with `weights_only` set to `False` will likely succeed" in msg
    with pytest.raises(pickle.UnpicklingError):
        jitorch.load(io.BytesIO(data), weights_only=None)
    # the classes inside are asked for too, in file order, outermost first
    with jitorch.serialization.safe_globals([Net]):
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL jitorch\.nn\.modules\."
                                                         r"container\.Sequential was not"):
            jitorch.load(io.BytesIO(data))
    assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [_path(g) for g in
                                                                   [Net, nn.Sequential,
                                                                    nn.Linear, nn.Tanh, F.relu]]


def test_safe_globals_context_and_registry():
    jitorch.manual_seed(1)
    m, x = Net(), jitorch.randn(2, 3)
    data = _bytes(m)
    with jitorch.serialization.safe_globals(NET_GLOBALS) as ctx:
        assert jitorch.serialization.get_safe_globals() == NET_GLOBALS
        m2 = jitorch.load(io.BytesIO(data))
        assert S.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == []
        assert ctx.safe_globals == NET_GLOBALS
    assert jitorch.serialization.get_safe_globals() == []  # restored on exit
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    with pytest.raises(KeyError):
        with jitorch.serialization.safe_globals([Net]):
            raise KeyError("x")
    assert jitorch.serialization.get_safe_globals() == []  # restored when the block raises
    jitorch.serialization.add_safe_globals(NET_GLOBALS[:3])
    jitorch.serialization.add_safe_globals(NET_GLOBALS[3:])
    assert type(jitorch.load(io.BytesIO(data))) is Net
    jitorch.serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        jitorch.load(io.BytesIO(data))


def test_allow_list_matches_by_path_and_uses_the_users_object():
    class Stand(nn.Module):
        pass
    ns = argparse.Namespace(lr=0.1, epochs=3, name="run")
    data = _bytes({"args": ns})
    # (object, path) tuples: the path the file uses resolves to the object given
    with jitorch.serialization.safe_globals([(Stand, "argparse.Namespace")]):
        out = jitorch.load(io.BytesIO(data))["args"]
    assert type(out) is Stand and out.lr == 0.1 and out.name == "run"
    with jitorch.serialization.safe_globals([argparse.Namespace]):
        assert jitorch.load(io.BytesIO(data))["args"] == ns
    with pytest.raises(ValueError, match="tuple"):
        jitorch.serialization.add_safe_globals([(Stand, 1)])
    with pytest.raises(TypeError, match="not a class or function"):
        jitorch.serialization.add_safe_globals([3])


def test_weights_only_false_imports_the_module(tmp_path, monkeypatch):
    (tmp_path / "jt_saved_mod.py").write_text(
        "import jitorch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = nn.Linear(2, 2)\n"
        "    def forward(self, x):\n"
        "        return self.lin(x) * 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import jt_saved_mod
    m = jt_saved_mod.Block()
    data = _bytes(m)
    del sys.modules["jt_saved_mod"]
    m2 = jitorch.load(io.BytesIO(data), weights_only=False)
    assert "jt_saved_mod" in sys.modules and type(m2).__name__ == "Block"
    x = jitorch.ones(1, 2)
    assert jitorch.equal(m2(x), m(x))
    del sys.modules["jt_saved_mod"]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    with pytest.raises(ModuleNotFoundError, match="jt_saved_mod"):
        jitorch.load(io.BytesIO(data), weights_only=False)


def test_init_is_not_called_and_state_is_restored():
    r = Recorder()
    r.v = 7
    r.extra = [1, {"k": jitorch.arange(3)}]
    data = _bytes(r)
    Recorder.inits = 0
    r2 = jitorch.load(io.BytesIO(data), weights_only=False)
    assert Recorder.inits == 0 and r2.v == 7 and r2.extra[1]["k"].tolist() == [0, 1, 2]


def test_shared_objects_tied_weights_and_cycles():
    shared = nn.Linear(3, 3)
    m = nn.Sequential(shared, nn.Tanh(), shared)
    m.back = {"parent": m}  # a cycle through a plain attribute
    enc, dec = nn.Embedding(5, 3), nn.Linear(3, 5, bias=False)
    dec.weight = enc.weight  # tied weights
    pair = nn.ModuleList([enc, dec])
    out = jitorch.load(io.BytesIO(_bytes([m, pair])), weights_only=False)
    m2, pair2 = out
    assert m2[0] is m2[2] and m2.back["parent"] is m2
    assert pair2[0].weight is pair2[1].weight


def test_hooks_are_not_saved_and_say_so():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda mod, inp, out: out * 0)
    with pytest.warns(UserWarning, match="hooks of Linear .*_forward_hooks.*not saved"):
        data = _bytes(m)
    m2 = jitorch.load(io.BytesIO(data), weights_only=False)
    assert not m2._forward_hooks
    x = jitorch.ones(1, 2)
    assert jitorch.equal(m2(x), jitorch.nn.functional.linear(x, m.weight, m.bias))
    m2.register_forward_hook(lambda mod, inp, out: out * 0)  # hook tables exist again
    assert m2(x).abs().sum().item() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _bytes(nn.Linear(2, 2))  # no hooks: no warning


def test_numpy_arrays_follow_pytorch():
    arrays = {"i": np.arange(6, dtype=np.uint16).reshape(2, 3),
              "f": np.asfortranarray(np.linspace(0, 1, 6).reshape(2, 3)),
              "b": np.array([True, False]), "u": np.array(["ab", "c"]),
              "s": np.float32(1.5), "z": np.zeros((0, 3), np.complex64)}
    data = _bytes(arrays)
    rec = _path(np.arange(1).__reduce__()[0])
    assert rec.endswith("multiarray._reconstruct")
    with pytest.raises(pickle.UnpicklingError, match=rf"GLOBAL {rec} was not an allowed"):
        jitorch.load(io.BytesIO(data))
    out = jitorch.load(io.BytesIO(data), weights_only=False)
    with jitorch.serialization.safe_globals([np.arange(1).__reduce__()[0],
                                             np.float64(0).__reduce__()[0]]):
        out2 = jitorch.load(io.BytesIO(data))
    for got in (out, out2):
        for k, a in arrays.items():
            assert type(got[k]) is type(a) and got[k].dtype == a.dtype
            np.testing.assert_array_equal(got[k], a)
        assert got["f"].flags.f_contiguous
    with pytest.raises(TypeError, match="array of Python objects"):
        _bytes(np.array([{"a": 1}], dtype=object))


def test_save_refuses_what_cannot_be_found_again():
    with pytest.raises(TypeError, match=r"\(at obj\['f'\]\): function .*<lambda> is local"):
        _bytes({"f": lambda x: x})

    class Local:
        pass
    with pytest.raises(TypeError, match=r"Local .*local"):
        _bytes(Local())
    with pytest.raises(TypeError, match="built-in type"):
        _bytes(io.BytesIO())
    with pytest.raises(pickle.PickleError, match="my_script_module.save"):
        _bytes(jitorch.jit.script(nn.Linear(2, 2)))


def test_files_without_objects_stay_version_1():
    for obj, version in ((nn.Linear(2, 2).state_dict(), 1), (Net(), 2), (np.ones(2), 2)):
        with zipfile.ZipFile(io.BytesIO(_bytes(obj))) as zf:
            assert json.loads(zf.read("manifest.json"))["version"] == version


# ------------------------------------------------------------------------------------------
# hostile archives: what a file names is never called
# ------------------------------------------------------------------------------------------
def _obj(module, qualname, state=None):
    return {"$": "object", "id": 0, "module": module, "qualname": qualname,
            "state": state if state is not None else {"$": "dict", "items": []}}


@pytest.mark.parametrize("weights_only", [True, False])
def test_a_function_named_as_a_class_is_never_called(weights_only):
    data = _archive(_obj(__name__, "sentinel"))
    if weights_only:
        with pytest.raises(pickle.UnpicklingError, match="sentinel was not an allowed"):
            jitorch.load(io.BytesIO(data))
        with jitorch.serialization.safe_globals([sentinel]):
            with pytest.raises(TypeError, match="not a class; it is not called"):
                jitorch.load(io.BytesIO(data))
    else:
        with pytest.raises(TypeError, match="not a class; it is not called"):
            jitorch.load(io.BytesIO(data), weights_only=False)
        with pytest.raises(TypeError, match="os.system .* not a class"):
            jitorch.load(io.BytesIO(_archive(_obj("os", "system"))), weights_only=False)
    assert CALLS == []


def test_a_global_value_is_returned_not_called():
    data = _archive({"$": "global", "module": __name__, "qualname": "sentinel"})
    assert jitorch.load(io.BytesIO(data), weights_only=False) is sentinel
    with pytest.raises(pickle.UnpicklingError, match="sentinel"):
        jitorch.load(io.BytesIO(data))
    assert CALLS == []


@pytest.mark.parametrize("module,qualname", [
    ("os", "system.__globals__"), ("builtins", "__import__"), ("os", "a b"), ("", "x"),
    (__name__, "<locals>.x"), (__name__, "Recorder.__init__.__globals__")])
def test_paths_through_dunders_or_odd_names_are_refused(module, qualname):
    for node in (_obj(module, qualname), {"$": "global", "module": module,
                                          "qualname": qualname}):
        with pytest.raises(RuntimeError, match="not a valid jitorch file.*not a plain"
                                               "|not a valid jitorch file.*without module"):
            jitorch.load(io.BytesIO(_archive(node)), weights_only=False)
    assert CALLS == []


def test_state_and_array_members_are_checked():
    bad_state = _obj(__name__, "Recorder", state=[1, 2])
    with pytest.raises(RuntimeError, match="not a dict of attribute names"):
        jitorch.load(io.BytesIO(_archive(bad_state)), weights_only=False)
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    node = {"$": "ndarray", "member": "arrays/0.npy", "scalar": False}
    with pytest.raises(RuntimeError, match="holds Python objects"):
        jitorch.load(io.BytesIO(_archive(node, {"arrays/0.npy": buf.getvalue()})),
                     weights_only=False)
    for bad in ({"$": "ndarray", "member": "data/0.npy", "scalar": False},
                {"$": "objref", "id": 3}):
        with pytest.raises(RuntimeError, match="not a valid jitorch file"):
            jitorch.load(io.BytesIO(_archive(bad)), weights_only=False)


def test_jit_archives_never_hold_objects():
    buf = io.BytesIO()
    S.write_archive(buf, {"w": jitorch.ones(1)}, format_name="jitorch.jit")
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        man = json.loads(zf.read("manifest.json"))
    man["object"] = _obj("argparse", "Namespace")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("manifest.json", json.dumps(man))
    with pytest.raises(RuntimeError, match="unknown node tag 'object'"):
        S.read_archive(io.BytesIO(out.getvalue()), lambda a: a.decode(a.manifest["object"]),
                       expected_format="jitorch.jit")


def test_fuzzed_object_archives_fail_cleanly():
    # random byte edits of a whole-model file: it loads, or raises one of the load's errors
    import random
    data = _bytes({"m": Net(), "a": np.arange(4.0), "f": sentinel})
    rng = random.Random(7)
    cases = [data[:n] for n in range(0, len(data), 97)]
    for _ in range(400):
        d = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        cases.append(bytes(d))
    allowed = NET_GLOBALS + [sentinel, np.arange(1).__reduce__()[0]]
    with jitorch.serialization.safe_globals(allowed):
        for d in cases:
            try:
                jitorch.load(io.BytesIO(d))
            except (RuntimeError, pickle.UnpicklingError, TypeError):
                pass
    assert CALLS == []


def test_optimizer_objects_and_defaultdicts():
    jitorch.manual_seed(2)
    m = nn.Linear(3, 2)
    opt = jitorch.optim.Adam(m.parameters(), lr=0.01)
    x = jitorch.randn(4, 3)
    m(x).sum().backward()
    opt.step()
    data = _bytes({"model": m, "opt": opt})
    ck = jitorch.load(io.BytesIO(data), weights_only=False)
    m2, opt2 = ck["model"], ck["opt"]
    assert type(opt2.state) is type(opt.state) and opt2.state.default_factory is dict
    assert list(opt2.state)[0] is m2.weight and opt2.param_groups[0]["params"][0] is m2.weight
    for mod, o in ((m, opt), (m2, opt2)):  # one more identical step on each
        o.zero_grad()
        mod(x).sum().backward()
        o.step()
    assert jitorch.equal(m.weight, m2.weight) and jitorch.equal(m.bias, m2.bias)
    with jitorch.serialization.safe_globals([nn.Linear, type(opt), dict]):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL collections.defaultdict was"):
            jitorch.load(io.BytesIO(data))
        with jitorch.serialization.safe_globals([collections.defaultdict]):
            o3 = jitorch.load(io.BytesIO(data))["opt"]
    w3 = o3.param_groups[0]["params"][0]
    assert w3 in o3.state and set(o3.state[w3]) == set(opt.state[m.weight])


def test_callable_map_location_reaches_tensors_inside_objects():
    m = nn.Linear(2, 2)
    seen = []

    def loc(t, where):
        seen.append((tuple(t.shape), where))
        return t * 0 if not isinstance(t, nn.Parameter) else None
    m2 = jitorch.load(io.BytesIO(_bytes({"m": m, "t": jitorch.ones(3)})), weights_only=False,
                      map_location=loc)
    assert sorted(seen) == [((2,), "cpu"), ((2, 2), "cpu"), ((3,), "cpu")]
    assert m2["t"].tolist() == [0, 0, 0] and jitorch.equal(m2["m"].weight, m.weight)

    def broken(t, where):
        raise KeyError("from the user")
    with pytest.raises(KeyError, match="from the user"):
        jitorch.load(io.BytesIO(_bytes([jitorch.ones(1)])), map_location=broken)


def test_hook_tables_in_a_file_are_refused():
    hooks = {"$": "odict", "items": [[0, {"$": "global", "module": __name__,
                                          "qualname": "sentinel"}]]}
    node = _obj(nn.Identity.__module__, "Identity",
                state={"$": "dict", "items": [["_forward_hooks", hooks]]})
    with jitorch.serialization.safe_globals([nn.Identity, sentinel]):
        with pytest.raises(RuntimeError, match="state holds hooks"):
            jitorch.load(io.BytesIO(_archive(node)))
    assert CALLS == []

"""The rule for a whole object's state in a `jitorch.save` file (serialization_state,
docs/security.md "Whole objects"): it holds for the *effective* state, the instance `__dict__`
after the state was applied, whatever JSON shape carried it there.

The reported path (issue 21): a list of pairs as an `nn.Module`'s state went through
`Module.__setstate__` (`dict.update`) past the hook check, which looked at dict states only, and
the module's next call ran the hook. Then the class of it: every shape `dict.update` takes, a
module's own protocol that ends in Module's, duplicated names, `_modules` holding a function
(`Sequential.forward` calls it), an instance `forward`, `__deepcopy__`, non-str names, objects of
tensor and built-in classes; saving checks the same rule, legitimate saves still load; and the
object fuzzer (tests/fuzz_objects.py): structural edits of a valid archive load and are used, or
are refused, and never call the allowed traps they bring in. `JITORCH_FUZZ_ITERATIONS=N` runs N
edits instead of the CI slice.
"""
import argparse
import collections
import copy
import io
import json
import os
import pickle
import random
import warnings

import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F

import fuzz_objects as fo
from fuzz_objects import CALLS, archive, dict_node, glob, obj_node, reshapes, trap


@pytest.fixture(autouse=True)
def _clean():
    jitorch.serialization.clear_safe_globals()
    CALLS.clear()
    yield
    jitorch.serialization.clear_safe_globals()
    CALLS.clear()


def _load(data: bytes, allowed):
    with jitorch.serialization.safe_globals(allowed):
        return jitorch.load(io.BytesIO(data))


def _refused(data: bytes, allowed, match: str):
    with pytest.raises(RuntimeError, match=r"not a valid jitorch file: manifest\.json: object "
                                           r"\d+ \([\w.]+\): .*" + match):
        _load(data, allowed)


def _hooked(hooks: str) -> list:
    """State pairs that put `trap` into a module's hook table."""
    return [[hooks, {"$": "odict", "items": [[0, glob(trap)]]}]]


# --- the reported path, and every shape dict.update takes ---------------------------------------
@pytest.mark.parametrize("shape", sorted(set(reshapes([], 0)) - {"set of tuples"}))
@pytest.mark.parametrize("cls", [nn.Identity, nn.Softmax, fo.Compat])
def test_hooks_are_refused_whatever_shape_carries_them(cls, shape):
    """Identity: Module's __setstate__; Softmax: its own, calling Module's; Compat: its own
    __getstate__ too, so any state reaches its __setstate__ (then the rule on the result)."""
    pairs = [["training", False]] + _hooked("_forward_pre_hooks")
    data = archive(obj_node(cls, reshapes(pairs, 5)[shape]))
    with pytest.raises(RuntimeError, match="not a valid jitorch file: manifest.json: object 0"):
        m = _load(data, [cls, trap, argparse.Namespace])
        m(jitorch.ones(2, 4))  # where the hook ran before: never reached
    assert CALLS == []


def test_a_list_state_ran_the_hook_on_the_next_call():
    # the exploit, end to end: a list-form state on an allowed module
    data = archive(obj_node(nn.Identity, _hooked("_forward_pre_hooks")))
    _refused(data, [nn.Identity, trap], "its state is a list, not a dict of attribute names")
    assert CALLS == []


@pytest.mark.parametrize("hooks", fo.MODULE_HOOKS)
def test_every_hook_table_is_refused_in_a_list_state(hooks):
    _refused(archive(obj_node(fo.Compat, _hooked(hooks))), [fo.Compat, trap],
             rf"its state holds hooks \({hooks}\)")


def test_duplicated_names_and_json_keys_are_judged_by_what_wins():
    # a dict node naming _modules twice: the second (a function) is what the instance holds
    pairs = [["_modules", dict_node([])], ["_modules", dict_node([["0", glob(trap)]])]]
    seq = archive(obj_node(nn.Sequential, dict_node(pairs)))
    _refused(seq, [nn.Sequential, trap], "its state _modules is not a dict of names to modules")
    # two "state" keys in the JSON text: json keeps the last, so does the check
    text = (f'{{"$": "object", "id": 0, "module": "{nn.Identity.__module__}", "qualname": '
            f'"Identity", "state": {{"$": "dict", "items": []}}, "state": '
            f'{{"$": "tuple", "items": [null, [["_forward_hooks", {{"$": "odict", "items": '
            f'[[0, {{"$": "global", "module": "fuzz_objects", "qualname": "trap"}}]]}}]]]}}}}')
    members = {"manifest.json": ('{"format": "jitorch.save", "version": 2, "storages": [], '
                                 f'"object": {text}}}').encode()}
    _refused(fo.write_members(members), [nn.Identity, trap], "its state is a tuple")
    assert CALLS == []


# --- what jitorch's machinery calls: typed bookkeeping, no methods, no dunders ----------------
@pytest.mark.parametrize("name,value,why", [
    ("_modules", dict_node([["0", glob(trap)]]), "_modules is not a dict of names to modules"),
    ("_modules", dict_node([["0", glob(fo.Trap)]]), "_modules is not a dict of names to modul"),
    ("_parameters", dict_node([["w", glob(trap)]]), "_parameters is not a dict of names to ten"),
    ("_buffers", [1], "_buffers is not a dict"),
    ("training", glob(trap), "training is not a bool"),
    ("_non_persistent_buffers_set", dict_node([]), "_non_persistent_buffers_set is not a set"),
    ("_is_full_backward_hook", glob(trap), "_is_full_backward_hook is not None or a bool"),
    ("forward", glob(trap), "it sets forward, which would replace the method Sequential.forward"),
    ("_call_impl", glob(trap), "it sets _call_impl, which would replace the method"),
    ("_get_name", glob(trap), "it sets _get_name, which would replace"),
    ("state_dict", glob(trap), "it sets state_dict, which would replace"),
    ("__deepcopy__", glob(trap), "it sets __deepcopy__, a special name"),
    ("__class__", glob(fo.Trap), "it sets __class__, a special name"),
    (1, glob(trap), "attribute name 1 is a int, not a str"),
])
def test_module_state_that_jitorch_would_call_is_refused(name, value, why):
    data = archive(obj_node(nn.Sequential, dict_node([[name, value]])))
    _refused(data, [nn.Sequential, trap, fo.Trap], why)
    assert CALLS == []


def test_sequential_called_a_function_in_its_modules():
    # on the code before the rule this loaded, and m(x) called trap(x)
    data = archive(obj_node(nn.Sequential, dict_node([["_modules", dict_node([
        ["0", glob(trap)]])]])))
    with pytest.raises(RuntimeError, match="_modules"):
        _load(data, [nn.Sequential, trap])(jitorch.ones(2))
    assert CALLS == []


def test_plain_objects_and_optimizers_follow_the_same_rule():
    ns = archive(obj_node(argparse.Namespace, dict_node([["__deepcopy__", glob(trap)]])))
    with pytest.raises(RuntimeError, match="__deepcopy__, a special name"):
        copy.deepcopy(_load(ns, [argparse.Namespace, trap]))  # deepcopy called it before
    opt = jitorch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    buf = io.BytesIO()
    jitorch.save(opt, buf)
    members = fo.read_members(buf.getvalue())
    man = json.loads(members["manifest.json"])
    pairs = man["object"]["state"]["items"]
    allowed = [type(opt), trap, collections.defaultdict, dict]

    def edited(state):
        man["object"]["state"] = state
        return fo.write_members({**members, "manifest.json": json.dumps(man).encode()})
    # a method shadowed through the instance dict, as a dict or as a list of pairs
    _refused(edited(dict_node(pairs + [["step", glob(trap)]])), allowed,
             "it sets step, which would replace the method SGD.step")
    _refused(edited(pairs + [["zero_grad", glob(trap)]]), allowed, "it sets zero_grad")
    # a list state with step hooks: Optimizer.__setstate__ takes it and resets its hook tables
    loaded = _load(edited(pairs + _hooked("_optimizer_step_pre_hooks")), allowed)
    loaded.step()
    assert not loaded._optimizer_step_pre_hooks and CALLS == []


@pytest.mark.parametrize("cls,why", [
    (nn.Parameter, "tensors, dtypes and devices are saved as nodes of their own"),
    (jitorch.Tensor, "tensors, dtypes and devices"), (jitorch.device, "tensors, dtypes and dev"),
    (collections.OrderedDict, "it is a built-in type"), (jitorch.dtype, "tensors, dtypes")])
def test_classes_jitorch_save_never_writes_as_objects_are_refused(cls, why):
    # a Parameter object node could carry tensor hooks (`_hooks`) that backward calls
    data = archive(obj_node(cls, dict_node([["_hooks", {"$": "odict", "items": [
        [0, glob(trap)]]}]])))
    _refused(data, [cls, trap], "jitorch.save never writes one: " + why)


def test_a_protocol_of_its_own_still_takes_any_state():
    data = io.BytesIO()
    jitorch.save(Pair(1, "two"), data)
    got = _load(data.getvalue(), [Pair])
    assert (got.a, got.b) == (1, "two")


class Pair:
    """A class with its own pickling protocol (a tuple state), as pickle allows."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __getstate__(self):
        return (self.a, self.b)

    def __setstate__(self, state):
        self.a, self.b = state


# --- saving checks the same rule: every file it writes loads ----------------------------------
def test_save_refuses_what_load_would_refuse():
    m = nn.Linear(2, 2)
    m.forward = F.relu
    with pytest.raises(TypeError, match=r"\(at obj\): it sets forward, which would replace"):
        jitorch.save(m, io.BytesIO())
    ns = argparse.Namespace(__deepcopy__=F.relu)
    with pytest.raises(TypeError, match=r"\(at obj\['x'\]\): it sets __deepcopy__"):
        jitorch.save({"x": ns}, io.BytesIO())


def test_legitimate_saves_still_load():
    m = fo.Block()
    m.register_forward_hook(lambda mod, inp, out: out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the hook is dropped, with its warning
        data = fo.fixture()
        buf = io.BytesIO()
        jitorch.save({"m": m, "seq": nn.Sequential(nn.Linear(4, 4), nn.ReLU())}, buf)
    got = _load(data, fo.allowed())
    x = jitorch.randn(2, 4)
    assert got["model"](x).shape == (2, 3) and got["compat"].version == 2
    got["opt"].step()
    again = _load(buf.getvalue(), fo.allowed() + [nn.ReLU])
    assert jitorch.equal(again["m"](x), m(x)) and not again["m"]._forward_hooks


# --- the object fuzzer ---------------------------------------------------------------------------
def _iterations() -> int:
    return int(os.environ.get("JITORCH_FUZZ_ITERATIONS", "300"))


def test_object_fuzz():
    """Structural edits of a valid archive (tests/fuzz_objects.py): each loads and survives use,
    or is refused with one of load's errors; no edit makes jitorch call a trap."""
    data = fo.fixture()
    rng = random.Random(20261205)
    mut = fo.Mutator(rng)
    x = jitorch.randn(2, 4)
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(_iterations()):
        edited, what = mut.mutate(data)
        CALLS.clear()
        try:
            out = _load(edited, fo.allowed())
        except (RuntimeError, pickle.UnpicklingError) as e:
            assert "jitorch.load" in str(e) or "Weights only" in str(e), (what, e)
            outcomes["refused"] += 1
        except TypeError as e:  # a non-class named as a class, or one that cannot be made
            assert "jitorch.load: " in str(e), (what, e)
            outcomes["refused"] += 1
        except Exception as e:  # anything else escaping load is a bug
            raise AssertionError(f"{what}: load raised {type(e).__name__}: {e}")
        else:
            outcomes["loaded"] += 1
            fo.exercise(out, x)
        assert CALLS == [], f"{what}: the file made jitorch call {CALLS}"
    assert outcomes["refused"] and outcomes["loaded"], outcomes

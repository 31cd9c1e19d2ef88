"""Structural edits of valid `jitorch.save` archives that hold whole objects, for the object
fuzzer (tests/test_load_object_state.py), and the pieces hostile-archive tests build files from.

`Mutator(rng).mutate(data)` returns (edited archive bytes, what was edited). The edits are on the
object format, not on bytes (tests/test_save_objects.py flips bytes): an object's state turned
from a dict into a list or tuple of pairs, a `(state, slotstate)` pair, an odict, a set, or nested
inside another object or list; names added that jitorch's own machinery reads and calls (hook
tables holding a function, `_modules` holding one, `forward`, `__deepcopy__`, non-str names);
names duplicated (in a dict node's items, and as a duplicated JSON key: the last one wins); classes
swapped for other allowed ones (a tensor class, a built-in, a module with its own protocol) and
values swapped for allowed functions and classes. Every callable an edit brings in records its
calls in `CALLS`: whatever a file holds, jitorch must never call one of them.
"""
from __future__ import annotations

import argparse
import collections
import copy
import io
import json
import warnings

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F

from fuzz_archive import EditMutator, read_members, write_members

CALLS = []


def trap(*args, **kwargs):
    """An allowed function a hostile file names; calling it is the failure."""
    CALLS.append(("trap", args))


class Trap:
    """An allowed class a hostile file names (as a value, a class to build, a callable)."""

    def __init__(self, *args, **kwargs):
        CALLS.append(("Trap", args))

    def __call__(self, *args, **kwargs):
        CALLS.append(("Trap()", args))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 3))
        self.soft = nn.Softmax(dim=1)  # a class with its own __setstate__ (Module's after it)
        self.register_buffer("scale", jitorch.ones(3))
        self.label = "block"
        self.fn = F.relu  # a function as data; forward never calls it (edits may swap it)

    def forward(self, x):
        return self.soft(self.body(x)) * self.scale


class Compat(nn.Module):
    """Its own pickling protocol ending in Module's, as PyTorch code that reads old checkpoints
    writes it: whatever shape the state has, it reaches `__dict__.update`."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.version = 2

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("version", 1)

    def forward(self, x):
        return self.lin(x)


def allowed() -> list:
    """The allow-list a fuzzed load runs under: the fixture's classes, the traps, and classes an
    edit may name instead (a tensor class, a device, a built-in, a plain class)."""
    return [Block, Compat, nn.Sequential, nn.Linear, nn.Tanh, nn.Softmax, nn.Identity, F.relu,
            jitorch.optim.Adam, collections.defaultdict, dict, argparse.Namespace, trap, Trap,
            nn.Parameter, jitorch.device, collections.OrderedDict]


def fixture() -> bytes:
    """A valid archive: a model, an optimizer that has stepped (a defaultdict state), a module
    with its own protocol, a plain object."""
    jitorch.manual_seed(0)
    model, compat = Block(), Compat()
    opt = jitorch.optim.Adam(model.parameters(), lr=0.01)
    model(jitorch.randn(2, 4)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    jitorch.save({"model": model, "opt": opt, "compat": compat,
                  "args": argparse.Namespace(lr=0.01, name="run")}, buf)
    return buf.getvalue()


def archive(node, members=None) -> bytes:
    """A version-2 archive whose object tree is `node` (hand-built hostile files)."""
    members = dict(members or {})
    members["manifest.json"] = json.dumps({"format": "jitorch.save", "version": 2,
                                           "storages": [], "object": node}).encode()
    return write_members(dict(sorted(members.items(), key=lambda kv: kv[0] != "manifest.json")))


def glob(obj) -> dict:
    return {"$": "global", "module": obj.__module__, "qualname": obj.__qualname__}


def obj_node(cls, state, k=0) -> dict:
    return {"$": "object", "id": k, "module": cls.__module__, "qualname": cls.__qualname__,
            "state": state}


def dict_node(pairs) -> dict:
    return {"$": "dict", "items": [list(p) for p in pairs]}


def tuple_node(items) -> dict:
    return {"$": "tuple", "items": list(items)}


def reshapes(pairs, k) -> dict:
    """name -> the pairs `pairs` as each state shape `dict.update` takes (or nearly does)."""
    return {"dict": dict_node(pairs), "odict": {"$": "odict", "items": [list(p) for p in pairs]},
            "list of pairs": [list(p) for p in pairs],
            "tuple of pairs": tuple_node(tuple_node(p) for p in pairs),
            "list of tuples": [tuple_node(p) for p in pairs],
            "set of tuples": {"$": "set", "items": [tuple_node(p) for p in pairs
                                                    if not isinstance(p[1], (dict, list))]},
            "(state, slotstate)": tuple_node([dict_node(pairs[:1]), dict_node(pairs[1:])]),
            "pairs as slotstate": tuple_node([None, [list(p) for p in pairs]]),
            "nested list": [[list(p) for p in pairs]],
            "nested object": obj_node(argparse.Namespace, dict_node(pairs), k)}


MODULE_HOOKS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks",
                "_forward_hooks_always_called", "_forward_pre_hooks",
                "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
                "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
# names jitorch's machinery reads from an instance and calls what they hold (or Python does)
_EVIL_NAMES = list(MODULE_HOOKS) + [
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_modules", "_parameters",
    "_buffers", "forward", "_call_impl", "_get_name", "extra_repr", "state_dict", "step",
    "zero_grad", "__deepcopy__", "__reduce_ex__", "__class__", "__dict__", "__call__",
    "__getattr__", "training", "_is_full_backward_hook", "_non_persistent_buffers_set"]
# the names among them whose effect using a module or optimizer shows (picked more often)
_LIVE_NAMES = ["_forward_pre_hooks", "_forward_hooks", "_state_dict_hooks",
               "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_modules", "forward",
               "_call_impl", "__deepcopy__", "step", "zero_grad", "_get_name",
               "_optimizer_step_pre_hooks"]
_EVIL_KEYS = [1, True, None, tuple_node(["_forward_hooks"]), 2.5]
# the shapes dict.update takes (picked more often than those it refuses)
_UPDATE_SHAPES = ["dict", "odict", "list of pairs", "tuple of pairs", "list of tuples"]
_CLASSES = [Trap, Block, Compat, nn.Sequential, nn.Linear, nn.Identity, nn.Softmax,
            jitorch.optim.Adam, argparse.Namespace, nn.Parameter, jitorch.device,
            collections.OrderedDict]


class Mutator(EditMutator):
    """Structural edits of one archive's object tree; deterministic for a seeded `rng`."""

    def __init__(self, rng):
        self.rng = rng
        self.next_id = 10_000  # ids of the object nodes edits add
        self.edits = [self.inject, self.reshape, self.duplicate_item, self.duplicate_json_key,
                      self.retarget, self.swap_value, self.nest, self.two_edits]

    # -- values ------------------------------------------------------------------------------
    def callable_node(self):
        k, self.next_id = self.next_id, self.next_id + 1
        return self.pick([glob(trap), glob(Trap), obj_node(Trap, dict_node([]), k),
                          glob(nn.Linear)])

    def evil_pair(self):
        r = self.rng.random()
        name = self.pick(_LIVE_NAMES if r < 0.55 else _EVIL_NAMES if r < 0.9 else _EVIL_KEYS)
        f = self.callable_node()
        if name in ("_modules", "_parameters", "_buffers"):
            value = dict_node([["0", f]])
        elif isinstance(name, str) and "hooks" in name:
            value = {"$": "odict", "items": [[self.rng.randrange(3), f]]}
        else:
            value = self.pick([f, [f], dict_node([["x", f]])])
        return [name, value]

    def shape(self) -> str:
        return self.pick(_UPDATE_SHAPES if self.rng.random() < 0.75 else sorted(reshapes([], 0)))

    # -- the tree ----------------------------------------------------------------------------
    @staticmethod
    def objects(node, out=None) -> list:
        """Every object node in the tree (the defaultdict factory is not walked: it is called
        with no arguments on a missing key, as in PyTorch; docs/security.md)."""
        out = [] if out is None else out
        if isinstance(node, list):
            for v in node:
                Mutator.objects(v, out)
        elif isinstance(node, dict):
            if node.get("$") == "object":
                out.append(node)
            for key, v in node.items():
                if key not in ("$", "factory"):
                    Mutator.objects(v, out)
        return out

    @staticmethod
    def slots(node, out=None) -> list:
        """(container, key) of every value below `node` that an edit may replace."""
        out = [] if out is None else out
        if isinstance(node, list):
            for i, v in enumerate(node):
                out.append((node, i))
                Mutator.slots(v, out)
        elif isinstance(node, dict):
            for key, v in node.items():
                if key not in ("$", "factory", "id", "module", "qualname"):
                    out.append((node, key))
                    Mutator.slots(v, out)
        return out

    def pairs_of(self, node) -> list:
        st = node.get("state")
        if isinstance(st, dict) and st.get("$") in ("dict", "odict"):
            return [list(p) for p in st["items"]]
        return []

    def with_tree(self, data, fn):
        members = read_members(data)
        man = json.loads(members["manifest.json"])
        raw = {}
        what = fn(man, raw)
        text = json.dumps(man)
        for placeholder, body in raw.items():
            text = text.replace(placeholder, body)
        members["manifest.json"] = text.encode()
        return write_members(members), what

    # -- edits -------------------------------------------------------------------------------
    def inject(self, data):
        """An evil name in some object's state, as a dict item."""
        def fn(man, raw):
            node = self.pick(self.objects(man["object"]))
            pair = self.evil_pair()
            node["state"] = dict_node(self.pairs_of(node) + [pair])
            return f"inject {pair[0]!r} into {node['qualname']}"
        return self.with_tree(data, fn)

    def reshape(self, data):
        """Some object's state, an evil name added, in another shape `dict.update` takes."""
        def fn(man, raw):
            node = self.pick(self.objects(man["object"]))
            pairs = self.pairs_of(node)
            if self.rng.random() < 0.8:
                pairs.append(self.evil_pair())
            shape = self.shape()
            self.next_id += 1
            node["state"] = reshapes(pairs, self.next_id)[shape]
            return f"{node['qualname']} state as {shape} ({pairs[-1][0] if pairs else ''!r})"
        return self.with_tree(data, fn)

    def duplicate_item(self, data):
        """A name that is already in a state again, holding something else: the last wins."""
        def fn(man, raw):
            node = self.pick(self.objects(man["object"]))
            pairs = self.pairs_of(node)
            name = self.pick([p[0] for p in pairs] + _EVIL_NAMES[:3]) if pairs else "_modules"
            evil = self.evil_pair()
            pairs.append([name, evil[1]])
            node["state"] = dict_node(pairs)
            return f"{node['qualname']}: {name!r} twice"
        return self.with_tree(data, fn)

    def duplicate_json_key(self, data):
        """An object node with two "state" keys in its JSON text (json keeps the last)."""
        def fn(man, raw):
            node = self.pick(self.objects(man["object"]))
            pairs = self.pairs_of(node) + [self.evil_pair()]
            self.next_id += 1
            shape = self.shape()
            evil = json.dumps(reshapes(pairs, self.next_id)[shape])
            token = f"@dup{self.next_id}@"
            raw[f'"{token}": "{token}"'] = f'"state": {evil}'
            last = self.rng.random() < 0.7
            items = list(node.items())
            node.clear()
            node.update(items + [(token, token)] if last else [(token, token)] + items)
            where = "last" if last else "first"
            return f"{node['qualname']}: a second 'state' key ({shape}, {where})"
        return self.with_tree(data, fn)

    def retarget(self, data):
        """An object node names another allowed class (its state stays)."""
        def fn(man, raw):
            node = self.pick(self.objects(man["object"]))
            cls = self.pick(_CLASSES)
            old = node["qualname"]
            node["module"], node["qualname"] = cls.__module__, cls.__qualname__
            if self.rng.random() < 0.5:
                node["state"] = dict_node(self.pairs_of(node) + [self.evil_pair()])
            return f"{old} -> {cls.__qualname__}"
        return self.with_tree(data, fn)

    def swap_value(self, data):
        """Any value in the tree becomes a callable (a submodule, a tensor, a flag, a name)."""
        def fn(man, raw):
            container, key = self.pick(self.slots(man["object"]))
            container[key] = self.pick([self.callable_node(), dict_node([self.evil_pair()])])
            return f"value at {key!r} -> callable"
        return self.with_tree(data, fn)

    def nest(self, data):
        """States that refer elsewhere: an objref as a state, a module holding itself, one
        object's state moved into another's."""
        def fn(man, raw):
            objs = self.objects(man["object"])
            a, b = self.pick(objs), self.pick(objs)
            kind = self.rng.randrange(3)
            if kind == 0:
                a["state"] = {"$": "objref", "id": b["id"]}
            elif kind == 1:
                a["state"] = dict_node(self.pairs_of(a) + [
                    ["_modules", dict_node([["self", {"$": "objref", "id": a["id"]}]])]])
            else:
                a["state"], b["state"] = b["state"], a["state"]
            return f"nest {kind}: {a['qualname']} / {b['qualname']}"
        return self.with_tree(data, fn)



def exercise(obj, x) -> None:
    """Use a loaded object the way a program does (call modules, backward, step optimizers,
    print, copy, state_dict round trips); errors are fine, calls of the traps are not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what garbage prints on its way to an error
        _exercise(obj, x)


def _exercise(obj, x) -> None:
    seen, stack = set(), [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
        actions = [repr, copy.deepcopy, copy.copy]
        if isinstance(o, nn.Module):
            stack.extend(o.__dict__.values())
            actions += [lambda m: m(x).sum().backward(), lambda m: m.load_state_dict(
                m.state_dict()), lambda m: m.train().eval(), lambda m: m.zero_grad()]
        elif isinstance(o, jitorch.optim.Optimizer):
            actions += [lambda op: op.step(), lambda op: op.zero_grad(),
                        lambda op: op.load_state_dict(op.state_dict())]
        elif hasattr(o, "__dict__") and not isinstance(o, type):
            stack.extend(vars(o).values())
        for act in actions:
            try:
                act(o)
            except Exception:  # garbage in, a Python error out: fine
                pass

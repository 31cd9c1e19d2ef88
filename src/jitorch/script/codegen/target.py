"""The Target protocol, and the registry that chooses a target by device.

A target turns a specialised, fused graph into a program for one kind of device and loads it.
It owns, in `targets/<name>/`, its lowerings (registered in the one lowering table with
`@lowers("op", target="<name>")`, lowering.py), its kernels and its program format; the rest of
the compiler reaches it only through this protocol:

- `name`: the device type it compiles for (`TensorType.device`, the runtime's keys);
- `capabilities`: what the passes may assume of it (passes/capabilities.py: the dtypes its loops
  hold, which groups fusion may form); the runtime sets them on the graph before the pipeline;
- `packs_saved_ints`: its entries hold a `List[int]` argument or result as one array, so an
  autodiff pair's saved int scalars cross as one list (passes/autodiff_pack.py);
- `lowering_modules`: the modules that fill the lowering table with its rules (imported on the
  table's first use for this target);
- `generate(graph, written) -> program`: raises NotLowered for what it cannot lower (the
  runtime then runs the graph in the interpreter). A program offers `source` and `entry` (the
  module text and its entry function's name), `output_types`, `kernels` (the sources of the
  modules the entry imports), `checks_overlap` and `listing(source)` (what `fn.code` shows);
- `load(program) -> (module, is_new)`: the loaded module whose `entry` the runtime calls with the
  arguments' arrays;
- `spell(em, opdef, compute, expr)`: the target's spelling of a filled scalar template.

`get_target(device)` imports `jitorch.script.targets.<device type>` on first use and asks it for
its target (`load_target()`), so the runtime names no target and a new one is a new package plus
a line in `KNOWN`. The CUDA target (targets/cuda, issue 16) launches numba.cuda kernels from a
generated host entry; its capabilities differ (no complex, no row regions or reduction
prologues yet) and so does its spelling of templates (`spell`: `math.*` for NumPy's ufuncs).
"""
from __future__ import annotations

import importlib

from .. import ir
from ..passes.capabilities import Capabilities
from ..passes.types import devices_of
from . import NotLowered

KNOWN = ir.DEVICE_TYPES  # device types with a package under script/targets/
_PACKAGE = __package__.rsplit(".", 1)[0] + ".targets"  # jitorch.script.targets
_loaded: dict = {}


class Target:
    """A code generation target (see the module docstring); subclasses set the attributes and
    implement `generate` and `load`."""

    name: str = ""
    capabilities: Capabilities
    lowering_modules: tuple = ()
    # its programs take and return a `List[int]` as one array: a differentiated pair then saves
    # its int scalars as one such list (passes/autodiff_pack.py)
    packs_saved_ints: bool = False

    def generate(self, graph, written=()):
        raise NotImplementedError

    def load(self, program):
        raise NotImplementedError

    def spell(self, em, opdef, compute, expr: str) -> str:
        """A registry scalar template, filled in for `compute` with its operands still
        placeholders (codegen/elementwise.py), as this target's code spells it: its own names
        for the template's functions (CPU: fast float32 helpers; CUDA: `math.*` for NumPy's
        ufuncs). The templates themselves stay one spelling, NumPy's."""
        return expr

    def __repr__(self):
        return f"<Target {self.name}>"


def device_type(device: str) -> str:
    """'cuda:1' -> 'cuda': programs are specialised on the device type; the index is the
    caller's arrays' business."""
    return device.split(":", 1)[0]


def get_target(device: str) -> Target:
    """The target that compiles for `device` (a device type, or one with an index). An unknown
    device raises NotLowered; a known one without a compiler yet raises what its package says
    (targets/cuda: NotImplementedError)."""
    name = device_type(device)
    t = _loaded.get(name)
    if t is None:
        if name not in KNOWN:
            raise NotLowered(f"no code generator for device {device!r}")
        t = importlib.import_module(f"{_PACKAGE}.{name}").load_target()
        _loaded[name] = t
    return t


def device_of(types) -> str:
    """The one device of the tensors among `types` (IR types of a call's arguments, containers
    searched), 'cpu' when there are none; NotLowered when they are on several."""
    found = devices_of(types)
    if len(found) > 1:
        raise NotLowered(f"arguments on several devices ({', '.join(sorted(found))})")
    return found.pop() if found else "cpu"

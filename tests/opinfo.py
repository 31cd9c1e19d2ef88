"""The OpInfo table: one entry per public op, driving the generic op tests.

Each family file in `tests/opinfos/` defines `OPINFOS = [OpInfo(...), ...]`; this module
collects them. An entry names the op, a NumPy (or closed-form) reference, a sample generator
per dtype, the dtypes to test, the expected result dtype rule, tolerances, and whether the op's
VJP/JVP are checked by finite differences (in float64).

Samples hold NumPy arrays; the generic tests turn them into tensors for jitorch and pass the
same arrays to the reference.
"""
from __future__ import annotations

import importlib
import pathlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import jitorch

FLOATS = (jitorch.float32, jitorch.float64)
INTS = (jitorch.int32, jitorch.int64)
ALL_REAL = FLOATS + INTS


@dataclass
class Sample:
    args: tuple  # np.ndarray -> tensor argument; anything else passed through unchanged
    kwargs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class OpInfo:
    name: str  # public name: jitorch.<name>
    ref: Callable  # reference on NumPy arrays: ref(*args, **kwargs)
    samples: Callable[[np.dtype, np.random.Generator], list]  # (np dtype, rng) -> [Sample]
    dtypes: tuple = FLOATS
    # expected result dtype from the input dtype; None: the reference's dtype mapped to jitorch,
    # with float64 results of float32 inputs read as float32
    out_dtype: Callable | None = None
    grad: bool = True  # VJP checked against finite differences (float64 samples)
    jvp: bool = True  # JVP checked against finite differences
    method: bool = True  # also exposed as Tensor.<name>
    op: Callable | None = None  # defaults to getattr(jitorch, name)
    atol: float = 1e-5
    rtol: float = 1e-4
    grad_samples: Callable | None = None  # samples for the gradient tests (default: samples)
    skip_grad_args: tuple = ()  # positions of tensor args not differentiated (e.g. indices)
    compare: Callable | None = None  # custom comparison(actual_np, expected_np) -> None
    # the devices the op claims (its eager implementation runs on the device's namespace);
    # the generic tests run it on each of these that is under test (tests/devices.py)
    devices: tuple = ("cpu", "cuda")
    # the traced graph run op by op by the IR interpreter equals eager to the bit; False where
    # eager runs the compiled composite's program instead (softmax, log_softmax:
    # _ops/_row_programs.py), which the interpreter's NumPy ops match to atol/rtol only
    interpreted_exact: bool = True

    def fn(self):
        return self.op if self.op is not None else getattr(jitorch, self.name)


def to_tensor_args(sample: Sample, requires_grad: bool = False, skip=(), device=None):
    args = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = jitorch.tensor(a, device=device)
            if requires_grad and i not in skip and t.is_floating_point():
                t.requires_grad_(True)
            args.append(t)
        elif isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
            ts = [jitorch.tensor(x, device=device) for x in a]
            if requires_grad:
                ts = [t.requires_grad_(True) if t.is_floating_point() else t for t in ts]
            args.append(ts)
        else:
            args.append(a)
    return args


def load_opinfos() -> list:
    infos = []
    here = pathlib.Path(__file__).parent / "opinfos"
    for path in sorted(here.glob("*.py")):
        if path.name.startswith("_"):
            continue
        mod = importlib.import_module(f"opinfos.{path.stem}")
        infos.extend(mod.OPINFOS)
    return infos


OPINFOS = load_opinfos()

"""`functional_call`: run a module with some parameters/buffers replaced for one call.

PyTorch's `torch.nn.utils.stateless` (deprecated alias, warns) and the body of
`torch.func.functional_call` (`functional_call_dicts` below, for `jitorch.func` to expose):
tensors are swapped into the module's `_parameters`/`_buffers` slots (any Tensor, not only
Parameters, so gradients flow to the given tensors), and the originals are put back afterwards
even when forward raises. Tied weights follow `tie_weights`; `strict` checks the keys.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence

from ..._tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()


def _swap_tensor(module, name: str, tensor):
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is _MISSING:
            del module._parameters[name]
        else:
            module._parameters[name] = tensor
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is _MISSING:
            del module._buffers[name]
        else:
            module._buffers[name] = tensor
    else:
        orig = getattr(module, name) if hasattr(module, name) else _MISSING
        if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _submodule(module, path: str):
    for attr in path.split(".") if path else ():
        try:
            sub = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
        from ..modules.module import Module
        if not isinstance(sub, Module):
            raise TypeError(f"submodule `{path}`: {sub} is not an instance of torch.nn.Module")
        module = sub
    return module


def _swap_all(module, named: dict) -> dict:
    orig = {}
    try:
        for name, tensor in named.items():
            prefix, _, attr = name.rpartition(".")
            orig[name] = _swap_tensor(_submodule(module, prefix), attr, tensor)
    except Exception:
        _swap_all(module, orig)  # undo the swaps done so far
        raise
    return orig


def _untie_named_tensors_map(module, parameters_and_buffers: dict) -> dict:
    all_named = dict(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    by_tensor = {}
    for name, tensor in all_named.items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given = {n for n in parameters_and_buffers if n in tied}
    for name in given:
        names = tied[name]
        if (len(names & given) > 1
                and len({id(parameters_and_buffers[n]) for n in names & given}) != 1):
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False):
    named = (_untie_named_tensors_map(module, parameters_and_buffers) if tie_weights
             else parameters_and_buffers)
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(named)), sorted(set(named) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    orig = {}
    try:
        orig = _swap_all(module, named)
        yield
    finally:
        new = _swap_all(module, orig)
        # in-place updates made by forward (e.g. running stats) show in the caller's dict
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def _functional_call(module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    kwargs = {} if kwargs is None else kwargs
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)


def functional_call_dicts(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                          tie_weights: bool = True, strict: bool = False):
    """`torch.func.functional_call`: one dict, or a list/tuple of dicts with disjoint keys."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights,
                            strict=strict)


def functional_call(module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Deprecated alias of `jitorch.func.functional_call` (as in PyTorch)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)

"""FSDP's auto-wrap policies (`torch.distributed.fsdp.wrap`) and the recursive wrapping they
drive. A policy is called as `policy(module=m, recurse=bool, nonwrapped_numel=int)`: with
`recurse=True` it says whether to look inside `m`'s children, with `recurse=False` whether to
wrap `m` itself, given the parameters of `m` not already in a wrapped child."""
from __future__ import annotations

__all__ = ["ModuleWrapPolicy", "always_wrap_policy", "lambda_auto_wrap_policy",
           "size_based_auto_wrap_policy", "transformer_auto_wrap_policy"]


def always_wrap_policy(module, recurse: bool, nonwrapped_numel: int) -> bool:
    return True


def lambda_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int, lambda_fn) -> bool:
    """Wrap the modules for which `lambda_fn(module)` is True."""
    return True if recurse else bool(lambda_fn(module))


def _module_wrap_policy(module, recurse: bool, nonwrapped_numel: int, module_classes) -> bool:
    return True if recurse else isinstance(module, tuple(module_classes))


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls) -> bool:
    """Wrap every instance of the classes in `transformer_layer_cls` (a set)."""
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def _default_sets():
    from ...nn import ModuleDict, ModuleList, MultiheadAttention
    return {MultiheadAttention}, {ModuleList, ModuleDict}


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None) -> bool:
    """Wrap a module once its parameters not yet wrapped reach `min_num_params`; never look
    inside `force_leaf_modules` (MultiheadAttention) nor wrap `exclude_wrap_modules`
    (ModuleList, ModuleDict)."""
    leaf, exclude = _default_sets()
    leaf = leaf if force_leaf_modules is None else force_leaf_modules
    exclude = exclude if exclude_wrap_modules is None else exclude_wrap_modules
    if recurse:
        return not isinstance(module, tuple(leaf))
    return nonwrapped_numel >= min_num_params and not isinstance(module, tuple(exclude))


class ModuleWrapPolicy:
    """Wrap every instance of `module_classes` (PyTorch's policy object)."""

    def __init__(self, module_classes):
        self._module_classes = set(module_classes)

    def __call__(self, module, recurse: bool, nonwrapped_numel: int) -> bool:
        return _module_wrap_policy(module, recurse, nonwrapped_numel, self._module_classes)


def _as_policy(policy):
    """A set/list of module classes means ModuleWrapPolicy(them), as in PyTorch."""
    if isinstance(policy, (set, frozenset, list, tuple)):
        return ModuleWrapPolicy(policy)
    if not callable(policy):
        raise ValueError(f"auto_wrap_policy must be callable or a set of module classes, got "
                         f"{type(policy).__name__}")
    return policy


def _recursive_wrap(module, policy, wrap, only_wrap_children: bool = False):
    """PyTorch's `_recursive_wrap`: children first; returns (the module or its wrapper, the
    number of parameters now inside wrappers)."""
    from .fully_sharded_data_parallel import FullyShardedDataParallel
    if isinstance(module, FullyShardedDataParallel):
        return module, 0
    nonwrapped = sum(p.numel() for p in module.parameters())
    if not policy(module=module, recurse=True, nonwrapped_numel=nonwrapped):
        return module, 0
    wrapped_total = 0
    for name, child in list(module.named_children()):
        new, n = _recursive_wrap(child, policy, wrap)
        if new is not child:
            setattr(module, name, new)
        wrapped_total += n
    if not only_wrap_children and policy(module=module, recurse=False,
                                         nonwrapped_numel=nonwrapped - wrapped_total):
        return wrap(module), nonwrapped
    return module, wrapped_total

"""`FullyShardedDataParallel` (PyTorch's FSDP, `use_orig_params=False`) on jitorch.distributed.

Owns one FSDP unit: the parameters of its module that no nested unit owns are flattened, in
`named_parameters()` order, into one flat parameter padded to a multiple of the world size;
each rank keeps its 1/world_size shard as the unit's only Parameter (`_flat_param`, registered
on the wrapped module), so `model.parameters()` are the shards and an optimizer steps on them.
The original parameters leave their modules; during forward they are plain tensors, autograd
views into an unsharded flat tensor:
  * forward all-gathers the shards into a fresh leaf tensor and sets the views;
  * FULL_SHARD then reshards (except the root unit, whose backward starts at once): the data of
    every tensor the autograd graph saved from the unsharded buffer is swapped for a zero-strided
    placeholder, so only the shard stays in memory (PyTorch frees the storage), and a hook on
    the unit's outputs all-gathers again when backward reaches them and puts the saved tensors
    back onto the new buffer (same offsets and strides);
  * the full gradient accumulated in the unsharded leaf is reduce-scattered (averaged) into the
    shard's `.grad` (accumulating, like `.grad`), and the unsharded buffer is dropped;
  * SHARD_GRAD_OP keeps the unsharded parameters from forward to the end of backward;
  * NO_SHARD keeps the whole flat parameter on every rank and all-reduces its gradient (DDP).
`auto_wrap_policy` (wrap.py) wraps submodules in nested units first.
CUDA: the unit computes on its module's device (`compute_device`: the device of the module's
parameters, or `device_id`, to which a CPU module is moved first, as PyTorch's FSDP does); the
flat parameter, its shard, the unsharded buffer and the gradients live there, the all-gathers and
reduce-scatters go through the collectives' host staging (distributed_c10d), the root moves its
tensor inputs to the device, and the optimizer steps on the device shards. Under
`FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(...))` (the
default type) `state_dict()` gathers every unit and returns the original names and full
tensors (only on rank 0 with `rank0_only=True`; other ranks get an empty dict), on the CPU with
`offload_to_cpu=True` (parameters and buffers), else on the unit's device.
Every collective is blocking and issued in forward/backward order, the same on every rank.
Not supported (NotImplementedError naming them): HYBRID_SHARD, mixed precision, ignored modules
or states, `param_init_fn`, `use_orig_params=True`, LOCAL/SHARDED state dicts,
`load_state_dict`, `no_sync`, `summon_full_params`.
"""
from __future__ import annotations

import contextlib
import enum
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..._tensor import Tensor
from ...autograd import grad_mode
from ...nn.modules.module import ATTR_VERSION, Module
from ...nn.parameter import Parameter
from ..._device import CPU, as_device, backend_of
from ..._device.transfer import host
from .. import distributed_c10d as c10d

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "FullyShardedDataParallel",
           "MixedPrecision", "ShardingStrategy", "StateDictConfig", "StateDictType"]


class ShardingStrategy(enum.Enum):
    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()
    HYBRID_SHARD = enum.auto()
    _HYBRID_SHARD_ZERO2 = enum.auto()


class BackwardPrefetch(enum.Enum):
    """Accepted for compatibility: collectives here are blocking, so there is nothing to
    prefetch."""
    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


class StateDictType(enum.Enum):
    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    rank0_only: bool = False


@dataclass
class CPUOffload:
    """Parameters live on the CPU already (the MPI backend moves CPU tensors)."""
    offload_params: bool = False


@dataclass
class MixedPrecision:
    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None


_forward_depth = threading.local()  # >0 inside some unit's forward: that unit is not the root
_FULL_DICT = threading.local()  # set while a root builds a full state dict over its units


@contextlib.contextmanager
def _inside_forward():
    _forward_depth.n = getattr(_forward_depth, "n", 0) + 1
    try:
        yield
    finally:
        _forward_depth.n -= 1


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


def _address(a) -> int:
    """The address of a host (NumPy) or device (CuPy) array's first element."""
    iface = getattr(a, "__cuda_array_interface__", None) or a.__array_interface__
    return iface["data"][0]


def _view_at(buf, offset: int, shape, strides):
    """An array viewing `buf`'s memory from byte `offset` with `shape`/`strides` (a saved
    tensor put back onto a re-gathered buffer): NumPy's or, on a GPU, CuPy's constructor."""
    if isinstance(buf, np.ndarray):
        return np.ndarray(shape, buf.dtype, buffer=buf, offset=offset, strides=strides)
    return type(buf)(shape, buf.dtype, memptr=buf.data + offset, strides=strides)


def _compute_device(module: Module, device_id):
    """PyTorch's `_get_compute_device`: the device of the module's parameters, or `device_id`
    (a CPU module is moved there first); a module on several devices is refused."""
    want = None if device_id is None else as_device(device_id)
    devices = {p._device for p in module.parameters()}
    if len(devices) == 2 and CPU in devices and want is None:
        raise RuntimeError("To support a module with both CPU and GPU params, please pass in "
                           "device_id argument.")
    if len(devices) > 1 and not (len(devices) == 2 and CPU in devices):
        raise RuntimeError(f"FSDP only supports single device modules but got params on "
                           f"{sorted(str(d) for d in devices)}")
    if want is not None and CPU in devices:
        module.to(want)
        devices = {want}
    dev = next(iter(devices), want if want is not None else CPU)
    if want is not None and dev is not want:
        raise ValueError(f"Inconsistent compute device and `device_id` on rank "
                         f"{c10d.get_rank()}: {dev} vs {want}")
    return dev


def _to_device(obj, dev):
    """`obj`'s tensors (in lists, tuples, dicts) moved to `dev` (the root's inputs)."""
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(x, dev) for x in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, dev) for k, v in obj.items()}
    return obj


class FullyShardedDataParallel(Module):
    """`torch.distributed.fsdp.FullyShardedDataParallel(module, process_group=None,
    sharding_strategy=ShardingStrategy.FULL_SHARD, cpu_offload=None, auto_wrap_policy=None,
    ..., sync_module_states=False, ...)`."""

    def __init__(self, module: Module, process_group=None, sharding_strategy=None,
                 cpu_offload=None, auto_wrap_policy=None,
                 backward_prefetch=BackwardPrefetch.BACKWARD_PRE, mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states=None, device_mesh=None):
        super().__init__()
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None \
            else sharding_strategy
        unsupported = [(strategy in (ShardingStrategy.HYBRID_SHARD,
                                     ShardingStrategy._HYBRID_SHARD_ZERO2),
                        f"sharding_strategy={strategy}"),
                       (mixed_precision is not None, "mixed_precision"),
                       (ignored_modules is not None or ignored_states is not None,
                        "ignored_modules/ignored_states"),
                       (param_init_fn is not None, "param_init_fn"),
                       (use_orig_params, "use_orig_params=True"),
                       (device_mesh is not None, "device_mesh")]
        for bad, what in unsupported:
            if bad:
                raise NotImplementedError(f"jitorch: FullyShardedDataParallel's {what} is not "
                                          f"supported yet")
        pg = c10d._resolve(process_group)
        if pg is None:
            raise ValueError("FullyShardedDataParallel: this rank is not in the process group")
        self.process_group = pg
        self.compute_device = _compute_device(module, device_id)
        self.sharding_strategy = strategy
        self.cpu_offload = cpu_offload
        self.backward_prefetch = backward_prefetch
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        if auto_wrap_policy is not None:
            from .wrap import _as_policy, _recursive_wrap

            def wrap(m):
                return FullyShardedDataParallel(
                    m, process_group=pg, sharding_strategy=strategy, cpu_offload=cpu_offload,
                    backward_prefetch=backward_prefetch, sync_module_states=sync_module_states,
                    device_id=device_id)
            _recursive_wrap(module, _as_policy(auto_wrap_policy), wrap, only_wrap_children=True)
        self._fsdp_wrapped_module = module
        # the unit's own bookkeeping is plain Python, out of Module's attribute tables
        state = dict(uses=[], numels=[], shapes=[], full=None, swapped=[], regather=False,
                     views_set=False)
        object.__setattr__(self, "_unit", state)
        managed = self._managed_params()
        if sync_module_states:
            for t in [p for _, _, p in managed] + list(module.buffers()):
                c10d.broadcast(t.data, group=pg, group_src=0)
        self._flatten(managed)

    # --- construction -----------------------------------------------------------------------
    def _managed_params(self):
        """(submodule, name, parameter) of the wrapped module's parameters outside nested
        units, in named_parameters() order (a shared parameter once per use)."""
        out = []

        def visit(m):
            for name, p in m._parameters.items():
                if p is not None:
                    out.append((m, name, p))
            for child in m._modules.values():
                if child is not None and not isinstance(child, FullyShardedDataParallel):
                    visit(child)
        visit(self._fsdp_wrapped_module)
        return out

    def _flatten(self, managed) -> None:
        u = self._unit
        order, index = [], {}
        for m, name, p in managed:
            if id(p) not in index:
                index[id(p)] = len(order)
                order.append(p)
                u["uses"].append([])
            u["uses"][index[id(p)]].append((m, name))
        if not order:
            object.__setattr__(self, "_flat", None)
            return
        dtypes = {p.dtype for p in order}
        if len(dtypes) > 1:
            raise ValueError(f"FSDP only supports a single dtype per flat parameter, got "
                             f"{sorted(map(str, dtypes))}")
        u["numels"] = [p.numel() for p in order]
        u["shapes"] = [tuple(p.shape) for p in order]
        n, r = self.process_group.size(), self.process_group.rank()
        total = sum(u["numels"])
        sharded = self.sharding_strategy is not ShardingStrategy.NO_SHARD
        chunk = -(-total // n) if sharded else total
        flat = np.zeros(chunk * n if sharded else total, order[0]._data.dtype)
        off = 0
        for p in order:  # built on the host once, then placed on the compute device
            flat[off:off + p.numel()] = host(p).reshape(-1)
            off += p.numel()
        data = flat[r * chunk:(r + 1) * chunk].copy() if sharded else flat
        for uses in u["uses"]:
            for m, name in uses:
                del m._parameters[name]
        flat_param = Parameter(Tensor._make(data, order[0].dtype).to(self.compute_device))
        self._fsdp_wrapped_module.register_parameter("_flat_param", flat_param)
        object.__setattr__(self, "_flat", flat_param)
        u["padded"] = chunk * n if sharded else total
        if not sharded:
            flat_param.register_post_accumulate_grad_hook(self._all_reduce_grad)

    # --- properties -------------------------------------------------------------------------
    @property
    def module(self) -> Module:
        return self._fsdp_wrapped_module

    @property
    def _sharded(self) -> bool:
        return self._flat is not None and \
            self.sharding_strategy is not ShardingStrategy.NO_SHARD

    # --- unshard / reshard ------------------------------------------------------------------
    def _all_gather(self) -> Tensor:
        """The unsharded flat parameter, a new tensor (no history) on the shard's device."""
        flat = self._flat
        with grad_mode.no_grad():
            full = flat.new_empty(self._unit["padded"])
        c10d.all_gather_into_tensor(full, flat.detach(), group=self.process_group)
        return full

    def _set_views(self, full: Tensor) -> None:
        """The original parameters as views of `full` (autograd views when grad is on)."""
        u = self._unit
        off = 0
        for uses, numel, shape in zip(u["uses"], u["numels"], u["shapes"]):
            view = full.narrow(0, off, numel).view(shape)
            for m, name in uses:
                m.__dict__[name] = view  # a plain attribute, as PyTorch's views are
            off += numel
        ATTR_VERSION[0] += 1  # scripted modules re-check their attributes
        u["views_set"] = True

    def _drop_views(self) -> None:
        u = self._unit
        if u["views_set"]:
            for uses in u["uses"]:
                for m, name in uses:
                    m.__dict__.pop(name, None)
            ATTR_VERSION[0] += 1
            u["views_set"] = False

    def _unshard(self) -> None:
        u = self._unit
        if not self._sharded:
            self._set_views(self._flat)
            return
        full = self._all_gather()
        full.requires_grad_(grad_mode.is_grad_enabled())
        if full._requires_grad:
            full.register_post_accumulate_grad_hook(self._reduce_scatter_grad)
        u["full"] = full
        self._set_views(full)

    def _reshard_after_forward(self, outputs, boundary: set) -> None:
        """FULL_SHARD: keep only the shard in memory until backward reaches this unit."""
        u = self._unit
        full = u["full"]
        buf = full._data
        lo, hi = _address(buf), _address(buf) + buf.nbytes
        swapped, seen_nodes, seen_tensors = [], set(), set()

        def swap(t):
            if not isinstance(t, Tensor) or id(t) in seen_tensors:
                return
            seen_tensors.add(id(t))
            a = t._data
            start = _address(a)
            if a.size and lo <= start < hi:
                swapped.append((t, start - lo, a.shape, a.strides))
                xp = backend_of(t._device).xp
                t._data = xp.broadcast_to(xp.zeros((), a.dtype), a.shape)

        stack = [t._grad_fn for t in _tensors(outputs) if t._grad_fn is not None]
        while stack:
            node = stack.pop()
            if id(node) in seen_nodes or id(node) in boundary:
                continue
            seen_nodes.add(id(node))
            for v in (getattr(node, "saved", None) or {}).values():
                for t in (v if isinstance(v, (list, tuple)) else (v,)):
                    swap(t)
            for e in getattr(node, "next_edges", ()) or ():
                if e is not None:
                    stack.append(e[0])
        swap(full)
        u["swapped"] = swapped
        u["regather"] = True
        self._drop_views()
        for t in _tensors(outputs):
            if t._requires_grad and t._grad_fn is not None:
                t.register_hook(self._pre_backward)

    def _pre_backward(self, grad):
        u = self._unit
        if u["regather"]:
            u["regather"] = False
            buf = self._all_gather()._data
            for t, offset, shape, strides in u["swapped"]:
                t._data = _view_at(buf, offset, shape, strides)
            u["swapped"] = []
        return None

    def _reduce_scatter_grad(self, full: Tensor) -> None:
        """The full gradient, averaged over the ranks, goes into this rank's shard's .grad."""
        u = self._unit
        with grad_mode.no_grad():  # (on the shard's device, made as any factory makes it)
            shard = self._flat.new_empty(self._flat.shape)
        g = full.grad
        c10d.reduce_scatter_tensor(shard, g.contiguous(), op=c10d.ReduceOp.AVG,
                                   group=self.process_group)
        self._accumulate(shard)
        full.grad = None
        u["full"] = None
        self._drop_views()

    def _all_reduce_grad(self, flat: Tensor) -> None:
        c10d.all_reduce(flat.grad, op=c10d.ReduceOp.AVG, group=self.process_group)

    def _accumulate(self, g: Tensor) -> None:
        p = self._flat
        if p.grad is None:
            p.grad = g
        else:
            p.grad._data += g._data
            p.grad._version[0] += 1

    # --- forward ----------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        is_root = getattr(_forward_depth, "n", 0) == 0
        if is_root and self.compute_device is not CPU:
            args, kwargs = _to_device(args, self.compute_device), \
                _to_device(kwargs, self.compute_device)
        if self._flat is None:
            with _inside_forward():
                return self._fsdp_wrapped_module(*args, **kwargs)
        self._unshard()
        boundary = {id(t._grad_fn) for t in _tensors((args, kwargs)) if t._grad_fn is not None}
        with _inside_forward():
            out = self._fsdp_wrapped_module(*args, **kwargs)
        if not self._sharded:
            return out
        if not grad_mode.is_grad_enabled():
            self._unit["full"] = None
            self._drop_views()
        elif self.sharding_strategy is ShardingStrategy.FULL_SHARD and not is_root:
            self._reshard_after_forward(out, boundary)
        return out

    # --- state dicts ------------------------------------------------------------------------
    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module: Module, state_dict_type: StateDictType,
                        state_dict_config=None, optim_state_dict_config=None):
        """Set the state-dict type (and config) of every FSDP unit in `module` for the
        block."""
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if state_dict_type is not StateDictType.FULL_STATE_DICT:
            raise NotImplementedError(f"jitorch: FSDP state dict type {state_dict_type} is not "
                                      f"supported yet (FULL_STATE_DICT is)")
        config = state_dict_config if state_dict_config is not None else FullStateDictConfig()
        before = [(u._state_dict_type, u._state_dict_config) for u in units]
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, config
        try:
            yield
        finally:
            for u, (t, c) in zip(units, before):
                u._state_dict_type, u._state_dict_config = t, c

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """The full state dict (original names, unsharded tensors); a collective: every rank
        calls it. With `rank0_only`, ranks other than 0 get an empty dict."""
        if getattr(_FULL_DICT, "active", False):  # a nested unit inside its root's call
            return Module.state_dict(self, *args, destination=destination, prefix=prefix,
                                     keep_vars=keep_vars)
        units = [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]
        exposed = []
        _FULL_DICT.active = True
        try:
            for u in units:
                exposed.append(u._expose_full_params())
            sd = Module.state_dict(self, prefix=prefix, keep_vars=keep_vars)
        finally:
            _FULL_DICT.active = False
            for u, undo in zip(reversed(units), reversed(exposed)):
                undo()
        config = self._state_dict_config
        if getattr(config, "rank0_only", False) and self.process_group.rank() != 0:
            return OrderedDict()
        cpu = getattr(config, "offload_to_cpu", False)
        out = OrderedDict((k.replace("_fsdp_wrapped_module.", ""), v.cpu() if cpu else v)
                          for k, v in sd.items())
        if destination is not None:
            destination.update(out)
            return destination
        return out

    def _expose_full_params(self):
        """Put the original parameters (full, as new Parameters) back into their modules and
        hide the flat parameter; returns the undo."""
        if self._flat is None:
            return lambda: None
        u = self._unit
        full = self._all_gather() if self._sharded else self._flat.detach()
        wrapped = self._fsdp_wrapped_module
        params = OrderedDict(wrapped._parameters)
        del wrapped._parameters["_flat_param"]
        off = 0
        for uses, numel, shape in zip(u["uses"], u["numels"], u["shapes"]):
            p = Parameter(full.narrow(0, off, numel).reshape(shape).clone())
            for m, name in uses:
                m._parameters[name] = p
            off += numel

        def undo():
            for uses in u["uses"]:
                for m, name in uses:
                    m._parameters.pop(name, None)
            wrapped._parameters.clear()
            wrapped._parameters.update(params)
        return undo

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        raise NotImplementedError("jitorch: FullyShardedDataParallel.load_state_dict is not "
                                  "supported yet; load the full state dict into the module "
                                  "before wrapping it")

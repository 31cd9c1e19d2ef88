"""`DistributedDataParallel` on `jitorch.distributed` (MPI): one model replica per rank, gradients
averaged over the ranks during backward.

Owns the reducer, PyTorch's design in Python:
  * construction broadcasts rank 0's parameters and buffers, so every replica starts equal;
  * the parameters that require grad are grouped into buckets in reverse `parameters()` order
    (the order backward produces their gradients), per dtype, the first bucket closing at 1 MiB
    and the others at `bucket_cap_mb` (PyTorch's limits);
  * a post-accumulate-grad hook per parameter copies its `.grad` into its bucket's flat buffer;
    a full bucket starts a nonblocking AVG all-reduce, strictly in bucket order so every rank
    issues the same sequence of collectives whatever order its hooks fire in;
  * when the last expected parameter is ready (still inside backward), the reducer waits for
    the buckets and writes the averaged gradients back into each `.grad`.
`find_unused_parameters=True` walks the autograd graph from the forward's outputs and marks the
parameters it cannot reach ready at once (their current `.grad`, or zeros), and all-reduces a
used-map so a parameter unused on every rank keeps its `.grad` (None stays None), as PyTorch's
reducer does. `no_sync()` skips the reduction for the backward of forwards run inside it
(gradient accumulation); the next synced backward averages the accumulated `.grad`.
Not supported yet (NotImplementedError naming them): `join()`, `register_comm_hook`, CUDA
modules; the all-reduces do not overlap backward's compute (MPI progresses them in the waits).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import grad_mode
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
_DEFAULT_BUCKET_CAP_MB = 25

_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by "
    "making sure all `forward` function outputs participate in calculating loss.")


class _Bucket:
    """Parameters (indices into the reducer's list) reduced together through one flat buffer."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.members: list[int] = []
        self.offsets: list[int] = []
        self.numel = 0
        self.flat: Tensor | None = None
        self.pending = 0
        self.work = None

    def add(self, index: int, numel: int) -> None:
        self.members.append(index)
        self.offsets.append(self.numel)
        self.numel += numel

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize


def _assign_buckets(params, first_bytes: int, cap_bytes: int) -> list[_Bucket]:
    """PyTorch's compute_bucket_assignment_by_size: reverse parameter order, one open bucket
    per dtype, the first of each dtype closing at `first_bytes` and the rest at `cap_bytes`."""
    buckets: list[_Bucket] = []
    open_: dict = {}
    closed_per_dtype: dict = {}
    for i in reversed(range(len(params))):
        p = params[i]
        b = open_.get(p.dtype)
        if b is None:
            b = open_[p.dtype] = _Bucket(p.dtype)
        b.add(i, p.numel())
        limit = first_bytes if closed_per_dtype.get(p.dtype, 0) == 0 else cap_bytes
        if b.nbytes >= limit:
            buckets.append(b)
            closed_per_dtype[p.dtype] = closed_per_dtype.get(p.dtype, 0) + 1
            del open_[p.dtype]
    buckets.extend(open_.values())
    return buckets


def _reachable_leaves(outputs) -> set[int]:
    """ids of the leaf tensors whose gradient accumulators the outputs' graphs reach."""
    from ...autograd.graph import AccumulateGrad
    roots, stack = set(), []

    def collect(o):
        if isinstance(o, Tensor):
            if o._grad_fn is not None:
                stack.append(o._grad_fn)
            elif o._requires_grad:
                roots.add(id(o))
        elif isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)
    collect(outputs)
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            roots.add(id(n.variable))
            continue
        for e in n.next_edges:
            if e is not None:
                stack.append(e[0])
    return roots


class DistributedDataParallel(Module):
    """`nn.parallel.DistributedDataParallel(module, ...)`: `module` runs unchanged on each
    rank; backward leaves every rank's `.grad` averaged over the process group."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ...distributed.distributed_c10d import _resolve
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        devices = {p.device.type for p in module.parameters()}
        if devices != {"cpu"}:
            raise NotImplementedError(
                "jitorch: DistributedDataParallel of a module on CUDA is not supported yet "
                "(the MPI backend reduces CPU tensors)")
        if device_ids is not None or output_device is not None:
            raise ValueError(
                f"DistributedDataParallel device_ids and output_device arguments only work with "
                f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                f"{devices}.")
        if mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("jitorch: DistributedDataParallel's mixed_precision and "
                                      "device_mesh are not supported yet")
        self.module = module
        self.process_group = _resolve(process_group)
        if self.process_group is None:
            raise ValueError("DistributedDataParallel: this rank is not in the process group")
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        # the reducer's state is plain Python, kept out of Module's attribute tables
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_buckets",
                           _assign_buckets(params, min(_FIRST_BUCKET_BYTES,
                                                       self.bucket_bytes_cap),
                                           self.bucket_bytes_cap))
        where = {}
        for bi, b in enumerate(self._buckets):
            for slot, i in enumerate(b.members):
                where[i] = (bi, slot)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_iteration", None)
        self._sync_module_states()
        object.__setattr__(self, "_hook_handles", [
            p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)])

    # --- construction -----------------------------------------------------------------------
    def _root_rank(self) -> int:
        return self.process_group._ranks[0]

    def _broadcast(self, tensors) -> None:
        from ... import distributed as dist
        works = [dist.broadcast(t.data, src=self._root_rank(), group=self.process_group,
                                async_op=True) for t in tensors]
        for w in works:
            w.wait()

    def _sync_module_states(self) -> None:
        """Every rank starts from rank 0's parameters and buffers."""
        self._broadcast(list(self.module.parameters()) + list(self.module.buffers()))

    # --- forward ----------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        it = self._iteration
        if it is not None and it["ready"]:
            raise RuntimeError(_UNFINISHED)
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        out = self.module(*inputs, **kwargs)
        if grad_mode.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(out)
        else:
            object.__setattr__(self, "_iteration", None)
        return out

    def _prepare_for_backward(self, outputs) -> None:
        for b in self._buckets:
            b.pending = len(b.members)
            b.work = None
            if b.flat is None:
                from ..._creation import zeros
                b.flat = zeros(b.numel, dtype=b.dtype)
        it = {"ready": set(), "next": 0, "unused": []}
        object.__setattr__(self, "_iteration", it)
        if self.find_unused_parameters:
            reached = _reachable_leaves(outputs)
            it["unused"] = [i for i, p in enumerate(self._params) if id(p) not in reached]
            for i in it["unused"]:
                self._mark_ready(i)

    # --- backward ---------------------------------------------------------------------------
    def _hook(self, index: int):
        def hook(param):
            if self._iteration is not None:
                self._mark_ready(index)
        return hook

    def _mark_ready(self, index: int) -> None:
        it = self._iteration
        if index in it["ready"]:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of "
                "the following reasons: 1) Use of a module parameter outside the `forward` "
                "function; 2) Reused parameters in multiple reentrant backward passes; 3) "
                "backward called twice on the graph of one forward.")
        it["ready"].add(index)
        bi, slot = self._where[index]
        b = self._buckets[bi]
        p = self._params[index]
        off = b.offsets[slot]
        dst = b.flat._data[off:off + p.numel()]
        if p.grad is None:
            dst[...] = 0
        else:
            dst[...] = p.grad._data.reshape(-1)
        b.pending -= 1
        self._launch_ready_buckets()
        if len(it["ready"]) == len(self._params):
            self._finalize()

    def _launch_ready_buckets(self) -> None:
        from ... import distributed as dist
        it = self._iteration
        while it["next"] < len(self._buckets) and self._buckets[it["next"]].pending == 0:
            b = self._buckets[it["next"]]
            b.work = dist.all_reduce(b.flat, op=dist.ReduceOp.AVG, group=self.process_group,
                                     async_op=True)
            it["next"] += 1

    def _finalize(self) -> None:
        from ... import distributed as dist
        it = self._iteration
        object.__setattr__(self, "_iteration", None)
        used = None
        if self.find_unused_parameters:
            local = np.ones(len(self._params), np.int32)
            local[it["unused"]] = 0
            used = Tensor._make(local, dt.int32)
            dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self.process_group)
        for b in self._buckets:
            b.work.wait()
            for i, off in zip(b.members, b.offsets):
                if used is not None and not used._data[i]:
                    continue  # unused on every rank: PyTorch leaves its .grad alone
                p = self._params[i]
                avg = b.flat._data[off:off + p.numel()].reshape(p.shape)
                if p.grad is None:
                    p.grad = Tensor._make(avg.copy(), p.dtype)
                else:
                    p.grad._data[...] = avg
                    p.grad._version[0] += 1

    @contextlib.contextmanager
    def no_sync(self):
        """Backward of forwards run inside the context accumulate local gradients without
        all-reducing them; the first synced backward after averages the sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # --- not yet ----------------------------------------------------------------------------
    def join(self, *args, **kwargs):
        raise NotImplementedError("jitorch: DistributedDataParallel.join (uneven inputs) is "
                                  "not implemented yet")

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("jitorch: DistributedDataParallel.register_comm_hook is not "
                                  "implemented yet")

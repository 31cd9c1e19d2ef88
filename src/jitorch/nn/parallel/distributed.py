"""`DistributedDataParallel` on `jitorch.distributed` (MPI): one model replica per rank, gradients
averaged over the ranks during backward.

Owns the reducer, PyTorch's design in Python:
  * construction broadcasts rank 0's parameters and buffers, so every replica starts equal;
  * the parameters that require grad are grouped into buckets in reverse `parameters()` order
    (the order backward produces their gradients), per dtype and device, the first bucket
    closing at 1 MiB and the others at `bucket_cap_mb` (PyTorch's limits); a bucket's flat
    buffer lives on its parameters' device, so gradients are reduced and written back there;
  * a post-accumulate-grad hook per parameter copies its `.grad` into its bucket's flat buffer
    (with `gradient_as_bucket_view=True` the `.grad` then becomes a view into that buffer, so
    later backwards accumulate straight into it); a full bucket starts its reduction, strictly
    in bucket order so every rank issues the same sequence of collectives whatever order its
    hooks fire in: a nonblocking SUM all-reduce, or the communication hook given to
    `register_comm_hook` (a `GradBucket` in, a Future of the averaged buffer out);
  * overlap (`overlap_comm=True`, a jitorch extension, on by default where MPI has
    THREAD_MULTIPLE): the Works a bucket's reduction started go to jitorch.distributed's
    progress thread, which completes them in a blocking MPI wait (GIL released) while backward
    computes the next gradients; MPI advances a nonblocking collective only inside MPI calls,
    so without it the reductions run in the final wait. The last bucket is ready only when
    backward's compute is over, so nothing is left to overlap it with: backward's thread
    completes it itself (a hand-off to the thread and back costs two wake-ups). Collectives
    are always started and finished, and hook callbacks run, on the backward thread, so
    overlap changes no result;
  * when the last expected parameter is ready (still inside backward), the reducer waits for
    the buckets (the group's timeout is the deadline), divides the default reduction by the
    world size (or, under `join(divide_by_initial_world_size=False)`, by the number of ranks
    still active) and writes the averaged gradients back into each `.grad`.
`find_unused_parameters=True` walks the autograd graph from the forward's outputs and marks the
parameters it cannot reach ready at once (their current `.grad`, or zeros), and all-reduces a
used-map so a parameter unused on every rank keeps its `.grad` (None stays None), as PyTorch's
reducer does. `no_sync()` skips the reduction for the backward of forwards run inside it
(gradient accumulation); the next synced backward averages the accumulated `.grad`.
Uneven inputs: DDP is a `Joinable` (distributed/algorithms/join.py). Under `join()` an active
rank's forward notifies the join context, picks the buffers' source among the active ranks and
tells the joined ranks whether this iteration syncs gradients; `_DDPJoinHook.main_hook` makes a
joined rank issue the same collectives in the same order (zeros for its gradients), and its
`post_hook` broadcasts the final model from a last joiner.
Devices (PyTorch's rules): a module on the CPU, on one CUDA device (`device_ids=[i]` or None;
with `device_ids` the forward's inputs are moved to `cuda:i` first) or on several CUDA devices
(a multi-device module, `device_ids=None`); its parameters share one device type. CUDA buckets
reach MPI through host memory (distributed_c10d's staging).
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from ... import _dtype as dt
from ..._device.transfer import same_device
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...distributed._grad_bucket import GradBucket
from ...distributed._work import (background_progress_supported, progress_in_background,
                                  recording_works)
from ...distributed.algorithms.join import Join, Joinable, JoinHook
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
    """Parameters (indices into the reducer's list) reduced together through one flat buffer
    on their device."""

    def __init__(self, dtype, device):
        self.dtype = dtype
        self.device = device
        self.members: list[int] = []
        self.offsets: list[int] = []
        self.numel = 0
        self.flat: Tensor | None = None
        self.pending = 0
        self.future = None  # the reduction in flight: a Future of the averaged buffer
        self.background = None  # its Works, being completed by the progress thread

    def add(self, index: int, numel: int) -> None:
        self.members.append(index)
        self.offsets.append(self.numel)
        self.numel += numel

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize


def _assign_buckets(params, first_bytes: int, cap_bytes: int) -> list[_Bucket]:
    """PyTorch's compute_bucket_assignment_by_size: reverse parameter order, one open bucket
    per (dtype, device), the first of each closing at `first_bytes` and the rest at
    `cap_bytes`."""
    buckets: list[_Bucket] = []
    open_: dict = {}
    closed: dict = {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p.dtype, p.device)
        b = open_.get(key)
        if b is None:
            b = open_[key] = _Bucket(p.dtype, p.device)
        b.add(i, p.numel())
        limit = first_bytes if closed.get(key, 0) == 0 else cap_bytes
        if b.nbytes >= limit:
            buckets.append(b)
            closed[key] = closed.get(key, 0) + 1
            del open_[key]
    buckets.extend(open_.values())
    return buckets


def _device_index(d) -> int:
    """PyTorch's `_get_device_index(d, optional=True)` for `device_ids`/`output_device`: an
    int as it is, a CUDA device's index (none: the current device); the CPU is refused."""
    from ... import cuda
    from ... import device as _device
    if isinstance(d, str):
        d = _device(d)
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if isinstance(d, _device):
        if d.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {d}")
        return cuda.current_device() if d.index is None else d.index
    if d is None:
        return cuda.current_device()
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{d}")


def _to_device(obj, dev):
    """`obj` (the forward's inputs: tensors inside tuples, lists, dicts, named tuples) with
    every tensor on `dev` (differentiable moves), as PyTorch's `_recursive_to`."""
    from ..utils.rnn import PackedSequence
    if isinstance(obj, (Tensor, PackedSequence)):
        d = obj.data.device if isinstance(obj, PackedSequence) else obj.device
        return obj if d == dev else obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, dev) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, dev) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, dev)) for k, v in obj.items())
    return obj


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


class DistributedDataParallel(Module, Joinable):
    """`nn.parallel.DistributedDataParallel(module, ...)`: `module` runs unchanged on each
    rank; backward leaves every rank's `.grad` averaged over the process group.
    `overlap_comm` (jitorch only, keyword): reduce buckets during backward on the progress
    thread (True, the default) or only in backward's final wait (False)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, *, overlap_comm: bool = True):
        super().__init__()
        Joinable.__init__(self)
        from ...distributed.distributed_c10d import _resolve
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        module_params = list(module.parameters())
        devices = {p.device for p in module_params}
        device_types = {p.device.type for p in module_params}
        if len(device_types) != 1:
            raise ValueError(
                f"DistributedDataParallel's input module must be on the same type of devices, "
                f"but input module parameters locate in {device_types}.")
        self.device_type = next(iter(device_types))
        self.is_multi_device_module = len(devices) > 1
        if (device_ids is None or len(device_ids) == 0 or self.device_type == "cpu"
                or self.is_multi_device_module):
            if device_ids or output_device:
                raise ValueError(
                    f"DistributedDataParallel device_ids and output_device arguments only work "
                    f"with single-device/multiple-device GPU modules or CPU modules, but got "
                    f"device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {devices}.")
            self.device_ids = None
            self.output_device = None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = _device_index(device_ids[0] if output_device is None
                                               else output_device)
        if mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("jitorch: DistributedDataParallel's mixed_precision and "
                                      "device_mesh are not supported yet")
        self.module = module
        self.process_group = _resolve(process_group)
        if self.process_group is None:
            raise ValueError("DistributedDataParallel: this rank is not in the process group")
        self.device = module_params[0].device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.overlap_comm = overlap_comm
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
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
        object.__setattr__(self, "_views", {})  # gradient_as_bucket_view: index -> view
        object.__setattr__(self, "_iteration", None)
        object.__setattr__(self, "_comm_hook", None)
        object.__setattr__(self, "_comm_hook_state", None)
        # Works of the join protocol whose results this rank does not read at once (waited
        # before the next iteration's collectives, so no request is left behind)
        object.__setattr__(self, "_stray_works", [])
        object.__setattr__(self, "_active_ranks_work", None)
        self._sync_module_states()
        object.__setattr__(self, "_hook_handles", [
            p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)])

    # --- collectives on the group -----------------------------------------------------------
    def _broadcast(self, tensors, group_src: int = 0) -> None:
        from ... import distributed as dist
        works = [dist.broadcast(t.data, group=self.process_group, async_op=True,
                                group_src=group_src) for t in tensors]
        for w in works:
            w.wait()

    def _sync_module_states(self) -> None:
        """Every rank starts from rank 0's parameters and buffers."""
        self._broadcast(list(self.module.parameters()) + list(self.module.buffers()))

    def _find_common_rank(self, input_rank: int, rank_cond: bool) -> int:
        """The largest group rank among those with `rank_cond` (an all-reduce MAX)."""
        from ... import distributed as dist
        from ... import tensor
        t = tensor([input_rank if rank_cond else -1])
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        rank = int(t.item())
        if rank == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. "
                             "This indicates a bug in PyTorch, please report an issue.")
        return rank

    def _will_sync_module_buffers(self) -> bool:
        return (self.require_forward_param_sync and self.broadcast_buffers
                and any(True for _ in self.module.buffers()))

    def _sync_buffers(self, joined: bool = False) -> None:
        """Broadcast the buffers from rank 0, or under join from the highest active rank (rank
        0 may have joined, its buffers stale)."""
        src = 0
        if self._join_config.enable:
            src = self._find_common_rank(self.process_group.rank(), not joined)
        self._broadcast(list(self.module.buffers()), src)

    def _check_global_requires_backward_grad_sync(self, is_joined_rank: bool):
        """Under join: tells the joined ranks whether this iteration syncs gradients (an
        all-reduce of 1 from each active rank that does); a joined rank reads the answer."""
        from ... import distributed as dist
        from ... import full
        flag = full((1,), 1.0 if not is_joined_rank and self.require_backward_grad_sync
                    else 0.0)
        work = dist.all_reduce(flag, group=self.process_group, async_op=True)
        if not is_joined_rank:
            self._stray_works.append(work)
            return None
        work.wait()
        return flag.item() != 0

    def _wait_stray_works(self) -> None:
        for w in self._stray_works:
            w.wait()
        self._stray_works.clear()

    # --- forward ----------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        it = self._iteration
        if it is not None and it["ready"]:
            raise RuntimeError(_UNFINISHED)
        self._wait_stray_works()
        work = Join.notify_join_context(self)
        object.__setattr__(self, "_active_ranks_work", work)
        if work is not None:
            self._stray_works.append(work)
        if self._will_sync_module_buffers():
            self._sync_buffers()
        if self._join_config.enable:
            self._check_global_requires_backward_grad_sync(is_joined_rank=False)
        if self.device_ids:  # a single-device CUDA module: its inputs go to its device
            from ... import device as _device
            dev = _device(self.device_type, self.device_ids[0])
            inputs, kwargs = _to_device(inputs, dev), _to_device(kwargs, dev)
        out = self.module(*inputs, **kwargs)
        if grad_mode.is_grad_enabled() and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            self._prepare_for_backward(out)
        else:
            self.require_forward_param_sync = False
            object.__setattr__(self, "_iteration", None)
        return out

    def _prepare_for_backward(self, outputs) -> None:
        for b in self._buckets:
            b.pending = len(b.members)
            b.future = b.background = None
            if b.flat is None:
                from ..._creation import zeros
                b.flat = zeros(b.numel, dtype=b.dtype, device=b.device)
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

    def _view(self, index: int) -> Tensor:
        """Parameter `index`'s slot of its bucket's flat buffer, as a view of its shape."""
        v = self._views.get(index)
        if v is None:
            bi, slot = self._where[index]
            b = self._buckets[bi]
            p = self._params[index]
            with grad_mode.no_grad():
                v = b.flat.narrow(0, b.offsets[slot], p.numel()).view(p.shape)
            self._views[index] = v
        return v

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
        elif not (self.gradient_as_bucket_view and p.grad is self._views.get(index)):
            dst[...] = p.grad._data.reshape(-1)  # (a bucket view already holds it)
        b.pending -= 1
        self._launch_ready_buckets()
        if len(it["ready"]) == len(self._params):
            self._finalize()

    def _overlapping(self) -> bool:
        return self.overlap_comm and background_progress_supported()

    def _reduce_bucket(self, index: int, buffer: Tensor, overlap: bool):
        """Start bucket `index`'s reduction of `buffer`: (a Future of the result, the Pending
        of its Works on the progress thread when `overlap`, else None)."""
        from ... import distributed as dist
        b = self._buckets[index]
        params = [self._params[i] for i in b.members]
        bucket = GradBucket(index, buffer, params, b.offsets, index == len(self._buckets) - 1)
        with recording_works() as works:
            if self._comm_hook is None:  # the world-size division comes at the end
                fut = dist.all_reduce(buffer, group=self.process_group,
                                      async_op=True).get_future()
            else:
                fut = self._comm_hook(self._comm_hook_state, bucket)
        background = None
        if overlap and works:
            pg = self.process_group
            background = progress_in_background(works, "all_reduce", pg._timeout_s,
                                                pg._ranks[pg.rank()])
        return fut, background

    def _launch_ready_buckets(self) -> None:
        it = self._iteration
        while it["next"] < len(self._buckets) and self._buckets[it["next"]].pending == 0:
            b = self._buckets[it["next"]]
            last = it["next"] == len(self._buckets) - 1
            b.future, b.background = self._reduce_bucket(it["next"], b.flat,
                                                          self._overlapping() and not last)
            it["next"] += 1

    def _divisor(self) -> int:
        """The default reduction's divisor: the world size, or under
        `join(divide_by_initial_world_size=False)` the number of ranks still active."""
        work = self._active_ranks_work
        if work is None or self._divide_by_initial_world_size:
            return self.process_group.size()
        return int(work.result()[0].item())

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
        deadline = time.perf_counter() + self.process_group._timeout_s
        div = self._divisor() if self._comm_hook is None else None
        for b in self._buckets:
            if b.background is not None:
                b.background.wait(deadline)
            result = b.future.wait()
            if div is not None:
                b.flat._data /= div
            elif result is not b.flat:
                if not isinstance(result, Tensor) or result.numel() != b.numel:
                    raise RuntimeError(
                        "The communication hook's future must hold a tensor of the bucket "
                        f"buffer's size ({b.numel} elements), got {result!r}")
                b.flat._data[...] = result._data.reshape(-1)
            for i, off in zip(b.members, b.offsets):
                if used is not None and not used._data[i]:
                    continue  # unused on every rank: PyTorch leaves its .grad alone
                p = self._params[i]
                if self.gradient_as_bucket_view:
                    if p.grad is not self._views.get(i):
                        p.grad = self._view(i)
                    p.grad._version[0] += 1
                    continue
                avg = b.flat._data[off:off + p.numel()].reshape(p.shape)
                if p.grad is None:
                    p.grad = same_device(Tensor._make(avg.copy(), p.dtype), b.device)
                else:
                    p.grad._data[...] = avg
                    p.grad._version[0] += 1
            b.future = b.background = None

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

    # --- communication hooks ----------------------------------------------------------------
    def register_comm_hook(self, state, hook) -> None:
        """Reduce each bucket with `hook(state, bucket: GradBucket) -> Future` whose value is
        the averaged flat buffer (ddp_comm_hooks.default_hooks has PyTorch's). Once only,
        before the first backward."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        object.__setattr__(self, "_comm_hook", hook)
        object.__setattr__(self, "_comm_hook_state", state)

    # --- uneven inputs (Joinable) -----------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """Context manager for uneven inputs: ranks that run out keep shadowing the others'
        collectives until all have (distributed/algorithms/join.py)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _match_all_reduce_for_bwd_pass(self) -> None:
        """A joined rank's side of one backward: each bucket reduced as the active ranks do,
        with zeros for this rank's gradients."""
        from ..._creation import zeros
        self._wait_stray_works()
        # all at once, with no compute left to overlap: completed on this thread
        pending = [self._reduce_bucket(i, zeros(b.numel, dtype=b.dtype, device=b.device),
                                       False)[0]
                   for i, b in enumerate(self._buckets)]
        for fut in pending:
            fut.wait()

    def _match_unused_params_allreduce(self) -> None:
        from ... import distributed as dist
        unused = Tensor._make(np.zeros(len(self._params), np.int32), dt.int32)
        dist.all_reduce(unused, op=dist.ReduceOp.MAX, group=self.process_group)

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        """Every rank ends with the model of a last joiner (the highest such rank)."""
        self._wait_stray_works()
        src = self._find_common_rank(self.process_group.rank(), is_last_joiner)
        self._broadcast(list(self.module.parameters()) + list(self.module.buffers()), src)


class _DDPJoinHook(JoinHook):
    """What a joined DDP rank does per iteration of the still-active ranks, in their order:
    buffer broadcast, the backward-sync flag, the bucket all-reduces, the unused-map
    all-reduce."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool):
        ddp._divide_by_initial_world_size = divide_by_initial_world_size
        self.ddp = ddp

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp._will_sync_module_buffers():
            ddp._sync_buffers(joined=True)
        should_sync = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        ddp.require_forward_param_sync = should_sync
        if not should_sync:
            return
        ddp._match_all_reduce_for_bwd_pass()
        if ddp.find_unused_parameters:
            ddp._match_unused_params_allreduce()

    def post_hook(self, is_last_joiner: bool) -> None:
        self.ddp._sync_final_model(is_last_joiner)

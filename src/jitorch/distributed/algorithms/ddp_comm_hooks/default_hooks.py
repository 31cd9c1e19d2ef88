"""PyTorch's default DDP communication hooks (`ddp_comm_hooks.default_hooks`): each takes the
state given to `register_comm_hook` (a process group, or None for the default group) and a
`GradBucket`, starts the bucket's reduction and returns a Future of the averaged flat buffer."""
from __future__ import annotations

from ... import distributed_c10d as c10d

__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]


def _allreduce_fut(process_group, tensor):
    """Average `tensor` over the group: divide first, then a SUM all-reduce (PyTorch's order)."""
    group = process_group if process_group is not None else c10d._default()
    tensor.div_(group.size())
    work = c10d.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """The all-reduce DDP does without a hook, as a hook."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = process_group if process_group is not None else c10d._default()
    compressed = bucket.buffer().to(dtype).div_(group.size())
    fut = c10d.all_reduce(compressed, group=group, async_op=True).get_future()

    def decompress(fut):
        out = bucket.buffer()
        out.copy_(fut.value()[0])
        return out
    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Average the bucket in float16 (half the bytes on the wire), then cast back."""
    from .... import float16
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average the bucket in bfloat16, then cast back."""
    from .... import bfloat16
    return _compress_hook(bfloat16, process_group, bucket)

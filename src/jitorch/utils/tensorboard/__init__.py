"""`jitorch.utils.tensorboard`: PyTorch's TensorBoard writer (`SummaryWriter`). Re-exports only.

Needs the `tensorboard` package (the optional extra `jitorch[tensorboard]`); without it this
import raises ImportError saying so, as `torch.utils.tensorboard` does.
"""
try:
    import tensorboard as _tb
    from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: F401
except ImportError:
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: "
                      "pip install tensorboard (or jitorch[tensorboard])") from None


def _version(v: str) -> tuple:
    return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())


if _version(getattr(_tb, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above: "
                      "pip install -U tensorboard")
del _tb

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]

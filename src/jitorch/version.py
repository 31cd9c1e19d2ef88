"""`jitorch.version`: the versions (PyTorch's `torch.version` layout).

`__version__` is the PyTorch API level jitorch follows with jitorch's own release as the local
label ("2.13.0+jitorch.0.1.0"), a `TorchVersion`, so that version checks in PyTorch code
(`torch.__version__ >= "1.12"`, `packaging.version.parse(torch.__version__)`,
`int(torch.__version__.split('.')[0]) >= 2`) take their modern paths; docs/compat.md says why.
`jitorch` is the package's own release (the compile cache keys on it).
"""
from .torch_version import TorchVersion

__all__ = ["__version__", "jitorch", "torch_api", "cuda", "hip", "debug", "git_version"]

jitorch = "0.1.0"  # the package release (pyproject.toml)
torch_api = "2.13.0"  # the PyTorch release whose public API jitorch follows
__version__ = TorchVersion(f"{torch_api}+jitorch.{jitorch}")
cuda = None  # the CPU build's answer; CUDA devices come from numba-cuda/CuPy at run time
hip = None
debug = False
git_version = "Unknown"

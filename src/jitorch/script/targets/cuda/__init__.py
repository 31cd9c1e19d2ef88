"""The CUDA target (issue 16): not written yet.

It will hold the CUDA lowerings and kernels (numba.cuda kernels from the registry's scalar
templates, a generated host entry that allocates from the device pool and launches them on the
current stream), registered with `@lowers(..., target="cuda")`, and never import targets/cpu.
Until then selecting it says so instead of compiling anything.
"""


def load_target():
    raise NotImplementedError("compiling for CUDA is not implemented yet: scripted code on CUDA "
                              "tensors has no code generator (script/targets/cuda)")

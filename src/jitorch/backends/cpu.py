"""`jitorch.backends.cpu`: the CPU capability PyTorch reports; jitorch's kernels are compiled by
Numba for the host, which this names as PyTorch's "DEFAULT" level."""


def get_cpu_capability() -> str:
    return "DEFAULT"

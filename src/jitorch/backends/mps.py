"""`jitorch.backends.mps`: Apple's Metal backend is neither built nor available."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False

"""`jitorch.backends.mkldnn`: jitorch does not link oneDNN; `enabled` is a settable flag."""
enabled = True


def is_available() -> bool:
    return False

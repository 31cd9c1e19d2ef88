"""`jitorch.linalg` (being written)."""

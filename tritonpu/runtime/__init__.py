"""The runtime: ``jit`` and launches, autotuning, the cache, hooks; ``driver`` answers device queries
as ``triton.runtime.driver`` does."""
from tritonpu.runtime.device import driver

__all__ = ["driver"]

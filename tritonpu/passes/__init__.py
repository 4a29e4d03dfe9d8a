"""Passes over the dataflow IR, registered by name (see manager.py for the default pipeline)."""
from tritonpu.passes import canonicalize, cse, dce  # noqa: F401  (registers the passes)
from tritonpu.passes.manager import DEFAULT_PIPELINE, PASSES, Pass, PassError, PassManager, parse_pipeline, register

__all__ = ["DEFAULT_PIPELINE", "PASSES", "Pass", "PassError", "PassManager", "parse_pipeline", "register"]

"""Passes over the dataflow IR, registered by name (see manager.py for the default pipeline)."""
from tritonpu.passes import (buffer_planning, canonicalize, cse, dce, double_buffer, element_rows, epilogue_rows,  # noqa: F401
                             fusion, grid_stride, memory_analysis, one_program, panel_reuse, persistent, program_balance, stagger, tiling, trip_extents, unflatten, unswitch,
                             versioning, hoist)
from tritonpu.passes.manager import DEFAULT_PIPELINE, PASSES, Pass, PassError, PassManager, parse_pipeline, register

__all__ = ["DEFAULT_PIPELINE", "PASSES", "Pass", "PassError", "PassManager", "parse_pipeline", "register"]

"""The dataflow IR: types, the op table, objects, printer, parser, verifier, graph view."""
from tritonpu.ir import types
from tritonpu.ir.core import Builder, Function, Loc, Op, Region, UNKNOWN_LOC, Value
from tritonpu.ir.graph import dataflow_graph
from tritonpu.ir.ops import OPS, OpDef, opdef
from tritonpu.ir.parser import IRParseError, parse_function, parse_module
from tritonpu.ir.printer import print_function
from tritonpu.ir.verifier import VerifyError, verify

__all__ = ["types", "Builder", "Function", "Loc", "Op", "Region", "UNKNOWN_LOC", "Value", "dataflow_graph",
           "OPS", "OpDef", "opdef", "IRParseError", "parse_function", "parse_module", "print_function",
           "VerifyError", "verify"]

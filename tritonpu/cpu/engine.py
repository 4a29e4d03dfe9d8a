"""Compile (verify, O3 with the new pass manager, MCJIT) and launch lowered kernels.

Guarantees:

* A ``CompiledKernel`` is lowered and JIT-compiled once; the engine, the ctypes entry point and
  the optimised LLVM IR are kept in ``kernel.backend_artifacts["cpu"]`` and the IR text in
  ``kernel.asm["llvm"]``.
* A launch passes each array argument as the address of the caller's numpy buffer
  (``arr.ctypes.data``, no copy) with its size in bytes, each scalar by value, and runs the
  whole grid in one native call. Launches of one compiled kernel are serialised by a lock (its
  block buffers are static).
* A failing bounds check or ``device_assert`` raises ``tritonpu.ExecutionError`` with the op's
  source location and the reference evaluator's message.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import threading
from dataclasses import dataclass, field

import numpy as np

from tritonpu.errors import ExecutionError

_LOCK = threading.Lock()
_STATE: dict = {}
_TOKENS = itertools.count(1)
_RUNNING: dict = {}


def _llvm():
    import llvmlite.binding as llvm
    with _LOCK:
        if "tm" not in _STATE:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            libm = ctypes.util.find_library("m")
            if libm:
                llvm.load_library_permanently(libm)
            _STATE["tm"] = _new_tm(llvm)
            _STATE["layout"] = str(_STATE["tm"].target_data)
            _STATE["print_cb"] = _PRINT_T(_on_print)
            llvm.add_symbol("tpu_print", ctypes.cast(_STATE["print_cb"], ctypes.c_void_p).value)
    return llvm, _STATE["tm"]


def _new_tm(llvm):
    """A host target machine (MCJIT takes ownership of the one it is given: one per engine)."""
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3, jit=True)


_PRINT_T = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)

_CTYPES = {"i1": ctypes.c_int8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double, "f16": ctypes.c_uint16,
           "bf16": ctypes.c_uint16}


@dataclass
class CpuArtifact:
    engine: object
    cfunc: object
    lowered: object
    llvm_ir: str
    token: int
    prints: dict = field(default_factory=dict)     # op index -> [(numpy view, IR type)]
    lock: threading.Lock = field(default_factory=threading.Lock)


def optimize(mod, tm, level: int = 3) -> None:
    """Run LLVM's new-pass-manager pipeline at ``level`` on ``mod`` in place: the vectorisers on,
    loop unrolling off.  With unrolling, LLVM's loop vectoriser aborted the process on some kernels
    (an assertion, 'VPlan cost model and legacy cost model disagreed': no exception to catch; found
    by the fuzzer, seed 401393), and a sort network's hundreds of small loops took the unroller
    25-90 s (64x128 fp32 tl.sort: 3 s without, and the code ran faster).  bench/cpu_vs_numpy.py
    without it: vector add, softmax, layernorm unchanged, matmul 512^3 4.0 -> 8.8 ms (within its aim)."""
    llvm, _ = _llvm()
    pto = llvm.PipelineTuningOptions(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


def compile_ir(text: str):
    """Parse, verify and optimise LLVM IR text; returns the module."""
    llvm, tm = _llvm()
    mod = llvm.parse_assembly(text)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = _STATE["layout"]
    mod.verify()
    optimize(mod, tm)
    mod.verify()
    return mod


def compile_kernel(kernel) -> CpuArtifact:
    art = kernel.backend_artifacts.get("cpu")
    if art is not None:
        return art
    from tritonpu.cpu.lower import lower
    low = lower(kernel.fn)
    llvm, tm = _llvm()
    mod = compile_ir(low.text)
    text = str(mod)
    ee = llvm.create_mcjit_compiler(mod, _new_tm(llvm))
    ee.finalize_object()
    argtypes = []
    for a in kernel.fn.args:
        if a.type.is_ptr:
            argtypes += [ctypes.c_void_p, ctypes.c_int64]
        else:
            argtypes.append(_CTYPES[a.type.kind.name])
    argtypes += [ctypes.c_int32] * 3 + [ctypes.c_void_p, ctypes.c_int64]
    cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(ee.get_function_address("tpu_kernel"))
    art = CpuArtifact(ee, cfunc, low, text, next(_TOKENS))
    for opid, globs in low.prints.items():
        views = []
        for name, ty in globs:
            addr = ee.get_global_value_address(name)
            dt = np.dtype(np.int64) if ty.scalar.is_ptr else np.dtype(ty.scalar.np)
            n = max(1, ty.numel)
            raw = (ctypes.c_uint8 * (n * dt.itemsize)).from_address(addr)
            views.append((np.frombuffer(raw, dtype=dt).reshape(ty.shape), ty))
        art.prints[opid] = views
    kernel.backend_artifacts["cpu"] = art
    kernel.asm["llvm"] = text
    return art


def _on_print(token, opid, x, y, z):
    art = _RUNNING.get(token)
    if art is None:
        return
    op = art.lowered.ops[opid]
    vals = " ".join(str(np.asarray(v.copy() if v.ndim else v[()]).tolist()) for v, _ in art.prints[opid])
    print(f"pid ({x}, {y}, {z}) {op.attrs['prefix']}{vals}", flush=True)


def _scalar_arg(value, ty):
    name = ty.kind.name
    if name == "i1":
        return int(bool(value))
    if name in ("f32", "f64"):
        return float(value)
    return int(value)


def launch(kernel, arrays, grid, options=None) -> None:
    """Run every program of ``grid`` natively on the caller's arrays (in place)."""
    art = compile_kernel(kernel)
    args = []
    for p, a in zip(kernel.fn.args, arrays):
        if p.type.is_ptr:
            args += [a.ctypes.data, a.nbytes]
        else:
            args.append(_scalar_arg(a, p.type))
    err = np.zeros(8, np.int64)
    with art.lock:
        _RUNNING[art.token] = art
        try:
            rc = art.cfunc(*args, int(grid[0]), int(grid[1]), int(grid[2]), err.ctypes.data, art.token)
        finally:
            _RUNNING.pop(art.token, None)
    if rc != 0:
        raise _error(art, kernel, arrays, err)


def _error(art, kernel, arrays, err) -> ExecutionError:
    from tritonpu.cpu.memory import ERR_ASSERT, ERR_STEP, ERR_WHILE, MULTI
    from tritonpu.ref.evaluator import while_trips_message
    code, opid, x, y, z, k, off = (int(v) for v in err[:7])
    op = art.lowered.ops[opid]
    if code == ERR_ASSERT:
        msg = f"device_assert failed: {op.attrs['msg']}"
    elif code == ERR_WHILE:
        msg = while_trips_message(off, "cpu")
    elif code == ERR_STEP:
        msg = "for loop with step 0"
    else:
        item = op.operands[0].type.scalar.pointee.kind.bytes
        if k == MULTI:
            msg = f"{op.name}: address {off & (2**64 - 1):#x} does not point into any argument"
        else:
            ptr_arrays = [a for p, a in zip(kernel.fn.args, arrays) if p.type.is_ptr]
            name = art.lowered.ptr_names[k]
            size = ptr_arrays[k].nbytes
            if off < 0 or off + item > size:
                msg = (f"{op.name}: out-of-bounds access to `{name}` at element offset {off // item} (byte {off}); "
                       f"it has {size // item} elements of {item} bytes")
            else:
                msg = f"{op.name}: misaligned {item}-byte access to `{name}` at byte {off}"
    return ExecutionError(f"{msg} (in '{op.name}', program ({x}, {y}, {z}))", op.loc.file, op.loc.line, op.loc.col)

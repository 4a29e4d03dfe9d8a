"""The "cpu" backend: the dataflow IR lowered to LLVM IR with llvmlite, optimised at O3 and
JIT-compiled; the whole grid runs natively on the caller's arrays.

Modules: ``codegen`` (types, lowered values, loops, buffers), ``elementwise``, ``mathlib``,
``memory`` (bounds-checked loads, stores, atomics), ``reduce`` (reduce, scan, dot), ``control``
(for/if/while, print, assert), ``lower`` (the driver), ``engine`` (compile, cache, launch) and
``check`` (the precision check of ``check=True`` / ``tritonpu run --check``).
"""


def launch(kernel, arrays, grid, options=None):
    from tritonpu.cpu.engine import launch as _launch
    _launch(kernel, arrays, grid, options)
    return None

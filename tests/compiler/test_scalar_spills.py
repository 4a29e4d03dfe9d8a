"""More live scalars than the NPU's 64 registers: values spill to UB (``sst`` after the op, ``sld`` at
each use) instead of failing; results equal the reference's, in straight-line code, loops and ifs."""
import importlib.util

import numpy as np
import pytest

BACKENDS = ["ref", "cpu", "npu"]


def _kernel_module(tmp_path, n_scalars: int):
    """A kernel with ``n_scalars`` scalars computed up front and all used in a loop (generated: a
    @jit kernel needs its source in a file)."""
    lines = ["import tritonpu", "import tritonpu.language as tl", "", "", "@tritonpu.jit",
             "def many_scalars(o_ptr, n):", "    p = tl.program_id(0)"]
    lines += [f"    v{i} = p * {i + 3} + n * {i % 7}" for i in range(n_scalars)]
    lines += ["    acc = p * 0", "    for j in range(n):"]
    lines += [f"        acc = acc + v{i} * v{n_scalars - 1 - i} + j" for i in range(n_scalars)]
    lines += ["        if acc % 3 == 0:", f"            acc = acc - v{n_scalars // 2}", "    tl.store(o_ptr + p, acc)"]
    path = tmp_path / f"spills_{n_scalars}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _expected(n_scalars, programs, n):
    out = []
    for p in range(programs):
        v = [p * (i + 3) + n * (i % 7) for i in range(n_scalars)]
        acc = 0
        for j in range(n):
            for i in range(n_scalars):
                acc = acc + v[i] * v[n_scalars - 1 - i] + j
            if acc % 3 == 0:
                acc -= v[n_scalars // 2]
        out.append(acc)
    return np.array(out, np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n_scalars", [40, 75])
def test_many_live_scalars(tmp_path, backend, n_scalars):
    mod = _kernel_module(tmp_path, n_scalars)
    o = np.zeros(4, np.int32)
    h = mod.many_scalars[(4,)](o, 5, backend=backend)
    np.testing.assert_array_equal(o, _expected(n_scalars, 4, 5))
    if backend == "npu" and n_scalars > 64:
        assert h.asm["isa"].count("sst.") >= n_scalars - 64       # (this many could not have a register)

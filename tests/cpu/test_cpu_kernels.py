"""Whole kernels on the cpu backend against the reference evaluator and numpy: masked tails, 2-D
tiles, for/if/while, atomics, dot, reductions, scans, print, errors, vectorised IR, check=True."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cpu_helpers import BF16, assert_close, ir_kernel

from tritonpu.cpu import engine

import tritonpu  # noqa: E402
import tritonpu.language as tl  # noqa: E402


def both(kernel, grid, *args, **kw):
    """Run on ref and cpu on copies; return (ref arrays, cpu arrays, cpu handle)."""
    ra = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ca = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*ra, backend="ref", **kw)
    h = kernel[grid](*ca, backend="cpu", **kw)
    return [a for a in ra if isinstance(a, np.ndarray)], [a for a in ca if isinstance(a, np.ndarray)], h


@tritonpu.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_vector_add_masked_tail_and_vectorised_ir():
    n = 1000
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    h = add_kernel[(tritonpu.cdiv(n, 256),)](x, y, out, n, BLOCK=256, backend="cpu")
    np.testing.assert_array_equal(out, x + y)
    llvm = h.asm["llvm"]
    assert "<8 x float>" in llvm or "<16 x float>" in llvm or "<4 x float>" in llvm
    assert "tpu_kernel" in llvm


@tritonpu.jit
def tile2d_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=1.0)
    y = tl.where(x > 0.5, x * 2.0, -x) + tl.sum(x, axis=1)[:, None] + tl.max(x, axis=0)[None, :]
    tl.store(out_ptr + rn[None, :] * M + rm[:, None], y, mask=mask)     # transposed store


def test_2d_tiles_masked_transposed():
    M, N = 37, 29
    x = np.random.rand(M, N).astype(np.float32)
    out = np.zeros((N, M), np.float32)
    ref, cpu, _ = both(tile2d_kernel, (3, 2), x, out, M, N, BM=16, BN=16)
    np.testing.assert_allclose(cpu[1], ref[1], rtol=1e-5)


@tritonpu.jit
def control_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n, 3):
        acc = acc + tl.load(x_ptr + offs, mask=offs < i, other=0.0)
    k = 0
    while k < pid + 2:
        acc = acc * 0.5 + k
        k += 1
    if pid % 2 == 0:
        acc = acc - 1.0
    else:
        acc = tl.exp(acc * 0.01)
    for j in range(5, 0, -2):
        acc += j
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def test_for_while_if():
    x = np.random.rand(32).astype(np.float32)
    out = np.zeros(4 * 32, np.float32)
    ref, cpu, _ = both(control_kernel, (4,), x, out, 20, BLOCK=32)
    assert_close(cpu[1], ref[1], 1)


@tritonpu.jit
def swap_kernel(out_ptr, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK).to(tl.float32)
    b = a * 10.0
    for i in range(3):
        a, b = b, a + 1.0
    tl.store(out_ptr + tl.arange(0, BLOCK), a)
    tl.store(out_ptr + BLOCK + tl.arange(0, BLOCK), b)


def test_loop_carried_blocks_swapped():
    out = np.zeros(16, np.float32)
    ref, cpu, _ = both(swap_kernel, (1,), out, BLOCK=8)
    np.testing.assert_array_equal(cpu[0], ref[0])


@tritonpu.jit
def atomic_kernel(x_ptr, cnt_ptr, mx_ptr, old_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    old = tl.atomic_add(cnt_ptr + x % 4, 1, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)
    tl.atomic_max(mx_ptr + x % 3, x, mask=mask)
    tl.atomic_cas(mx_ptr + 3, 0, pid + 100)
    tl.atomic_xchg(cnt_ptr + 4, pid)


def test_atomics_sequential_old_values():
    n = 50
    x = np.random.randint(0, 100, n).astype(np.int32)
    ref, cpu, _ = both(atomic_kernel, (4,), x, np.zeros(5, np.int32), np.full(4, -1000, np.int32),
                       np.zeros(n, np.int32), n, BLOCK=16)
    for r, c in zip(ref, cpu):
        np.testing.assert_array_equal(c, r)


@tritonpu.jit
def atomic_float_kernel(acc_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.atomic_add(acc_ptr + offs % 2, x)
    tl.atomic_min(acc_ptr + 2 + offs % 2, x)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_atomic_float(dt):
    x = (np.random.rand(16) * 4).astype(dt)
    ref, cpu, _ = both(atomic_float_kernel, (3,), np.zeros(4, dt), x, BLOCK=16)
    np.testing.assert_array_equal(cpu[0], ref[0])


@tritonpu.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=c_ptr.dtype.element_ty)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("ab,c", [(np.float32, np.float32), (np.float16, np.float32), (BF16, np.float32),
                                  (np.int8, np.int32)])
def test_dot(ab, c):
    M, N, K = 16, 32, 64
    rng = np.random.default_rng(0)
    if np.dtype(ab).kind == "i":
        a, b = rng.integers(-128, 127, (M, K)).astype(ab), rng.integers(-128, 127, (K, N)).astype(ab)
    else:
        a, b = rng.standard_normal((M, K)).astype(ab), rng.standard_normal((K, N)).astype(ab)
    out = np.zeros((M, N), c)
    ref, cpu, _ = both(dot_kernel, (1,), a, b, out, M=M, N=N, K=K, BK=16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if np.dtype(c).kind == "i":
        np.testing.assert_array_equal(cpu[2], ref[2])
    else:
        np.testing.assert_allclose(cpu[2], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(cpu[2], ref[2], rtol=1e-4, atol=1e-4)


@tritonpu.jit
def dot_t_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    bt = tl.load(b_ptr + rn[:, None] * K + rk[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, tl.trans(bt)))


def test_dot_transposed_operand():
    a, bt = np.random.rand(16, 32).astype(np.float32), np.random.rand(16, 32).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    ref, cpu, _ = both(dot_t_kernel, (1,), a, bt, out, M=16, N=16, K=32)
    np.testing.assert_allclose(cpu[2], a @ bt.T, rtol=1e-5)


REDUCE_DTYPES = [np.float32, np.float16, BF16, np.int32, np.int8, np.uint16, np.float64]


@tritonpu.jit
def reduce_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    n = R if AXIS == 1 else C
    offs = tl.arange(0, R if AXIS == 1 else C)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    else:
        r = tl.argmin(x, axis=AXIS)
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=offs < n)


@pytest.mark.parametrize("dt", REDUCE_DTYPES)
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("R,C", [(8, 32), (8, 8)])   # 8x8: trip counts (7) not a multiple of the vector width
def test_reduce(dt, op, axis, R, C):
    rng = np.random.default_rng(7)
    if np.dtype(dt).kind in "iu":
        x = rng.integers(0 if np.dtype(dt).kind == "u" else -50, 50, (R, C)).astype(dt)
    else:
        x = rng.standard_normal((R, C)).astype(dt)
        x[1, 3] = np.nan
        x[R - 1, 0] = 40.0                     # the extreme in the last row (a loop tail)
        x[0, C - 1] = -40.0
    odt = np.int32 if op.startswith("arg") else dt
    out = np.zeros(R if axis == 1 else C, odt)
    ref, cpu, _ = both(reduce_kernel, (1,), x, out, R=R, C=C, AXIS=axis, OP=op)
    if op == "sum" and np.dtype(dt).kind == "f":
        np.testing.assert_allclose(cpu[1].astype(np.float64), ref[1].astype(np.float64),
                                   rtol={2: 8e-3}.get(np.dtype(dt).itemsize, 1e-5), atol=1e-5)
    else:
        assert_close(cpu[1], ref[1], 0, f"{op} {dt} axis {axis}")


@tritonpu.jit
def scan_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, REV: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=AXIS, reverse=REV))


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("rev", [False, True])
def test_scan(dt, axis, rev):
    x = (np.random.rand(4, 16) * 10).astype(dt)
    ref, cpu, _ = both(scan_kernel, (1,), x, np.zeros_like(x), R=4, C=16, AXIS=axis, REV=rev)
    np.testing.assert_array_equal(cpu[1], ref[1])


@tritonpu.jit
def oob_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))


def test_out_of_bounds_raises_like_ref():
    x, out = np.zeros(20, np.float32), np.zeros(20, np.float32)
    msgs = []
    for backend in ("ref", "cpu"):
        with pytest.raises(tritonpu.ExecutionError) as e:
            oob_kernel[(2,)](x, out, 20, BLOCK=16, backend=backend)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "out-of-bounds access to `out_ptr` at element offset 20" in msgs[1]
    assert "program (1, 0, 0)" in msgs[1]


def test_wild_pointer_never_segfaults():
    x, out = np.zeros(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(tritonpu.ExecutionError, match="out-of-bounds access to `x_ptr`"):
        oob_kernel[(1,)](x, out, 1 << 30, BLOCK=1 << 12, backend="cpu")
    k = ir_kernel("""func @k(%a: ptr<f32>) {
  %c = constant {value = -5} : i32
  %p = addptr %a, %c : ptr<f32>
  %v = load %p : f32
  store %a, %v
  return
}""")
    with pytest.raises(tritonpu.ExecutionError, match="out-of-bounds access to `a` at element offset -5 "):
        engine.launch(k, [np.zeros(4, np.float32)], (1, 1, 1))


@tritonpu.jit
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < 10, "x must be small")


def test_device_assert():
    assert_kernel[(1,)](np.zeros(8, np.int32), BLOCK=8, backend="cpu", debug=True)
    x = np.zeros(8, np.int32)
    x[5] = 11
    with pytest.raises(tritonpu.ExecutionError, match="device_assert failed: x must be small") as e:
        assert_kernel[(1,)](x, BLOCK=8, backend="cpu", debug=True)
    assert e.value.line is not None and e.value.line > 0


@tritonpu.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x=", x)
    tl.device_print("s=", tl.sum(x, axis=0))


def test_device_print_matches_ref(capfd):
    x = np.arange(4, dtype=np.int32)
    print_kernel[(2,)](x, BLOCK=4, backend="ref")
    want = capfd.readouterr().out
    print_kernel[(2,)](x, BLOCK=4, backend="cpu")
    got = capfd.readouterr().out
    assert got == want and "pid (1, 0, 0) x=[0, 1, 2, 3]" in got


@tritonpu.jit
def print_pid_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK)) * 3
    tl.device_print("x=", x)
    tl.device_print("pid=", tl.program_id(0))


def test_device_print_shows_the_values_not_what_sits_at_an_optimised_away_buffer(capfd):
    """The print buffers were internal globals the kernel writes and never reads: LLVM removed them
    and the callback printed other memory (an arange for x, 2.0f's bits for the program id)."""
    x = np.arange(4, dtype=np.float32) + 2
    print_pid_kernel[(2,)](x, BLOCK=4, backend="ref")
    want = capfd.readouterr().out
    print_pid_kernel[(2,)](x, BLOCK=4, backend="cpu")
    got = capfd.readouterr().out
    assert got == want
    assert "pid (1, 0, 0) x=[6.0, 9.0, 12.0, 15.0]" in got and "pid (1, 0, 0) pid=1" in got


def test_check_report_on_handle():
    n = 100
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    h = add_kernel[(1,)](x, y, out, n, BLOCK=128, backend="ref", check=True)
    assert h.check.ok and h.check.baseline == "cpu"
    assert [o.name for o in h.check.outputs] == ["out_ptr"]
    from tritonpu.cpu.check import compare
    bad = compare("o", "f32", np.array([1.0, 2.0], np.float32), np.array([1.0, 2.1], np.float32))
    assert not bad.ok and bad.bad == 1 and abs(bad.max_abs - 0.1) < 1e-6


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_the_check_runs_its_baseline_on_copies_that_alias_as_the_arguments_do(backend):
    """An in-place kernel (x given as input and output): the baseline's copies of x_ptr and
    out_ptr were two arrays, so it computed something else and the check reported a mismatch
    although the launch was right."""
    n = 100
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    h = add_kernel[(1,)](x, y, x, n, BLOCK=128, backend=backend, check=True)
    np.testing.assert_array_equal(x, np.arange(n) + 1)
    assert h.check.ok, h.check
    # views into one array that overlap: the copies share one buffer as they do
    from tritonpu.cpu.check import copies_sharing_memory
    base = np.arange(10, dtype=np.float32)
    a, b, other = base[2:8], base[5:], np.zeros(3, np.float32)
    ca, cb, co = copies_sharing_memory([a, b, other], [True, True, True])
    assert np.shares_memory(ca, cb) and not np.shares_memory(ca, a) and not np.shares_memory(co, other)
    ca[4] = -1
    assert cb[1] == -1 and a[4] == 6 and list(ca) == [2, 3, 4, 5, -1, 7] and list(co) == [0, 0, 0]


def test_cli_emit_llvm_and_check(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, tritonpu, tritonpu.language as tl
        @tritonpu.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(o_ptr + offs, tl.load(x_ptr + offs) * 2.0)
        x = np.ones(64, np.float32); o = np.zeros_like(x)
        k[(1,)](x, o, BLOCK=64)
        k[(1,)](x, o, BLOCK=64)
        assert (o == 2).all()
    """))
    r = subprocess.run([sys.executable, "-m", "tritonpu.cli", "run", str(script), "--backend", "cpu", "--emit-llvm",
                        "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("// ---- k: llvm ----") == 1
    assert "define" in r.stdout and "check k: cpu vs ref -> OK" in r.stdout


def test_compiled_once_per_specialization():
    x = np.ones(8, np.float32)
    h1 = add_kernel[(1,)](x, x, x.copy(), 8, BLOCK=8, backend="cpu")
    art = h1.kernel.backend_artifacts["cpu"]
    h2 = add_kernel[(1,)](x, x, x.copy(), 8, BLOCK=8, backend="cpu")
    assert h2.kernel.backend_artifacts["cpu"] is art


def test_a_kernel_that_made_llvm_abort_compiles_and_matches(tmp_path):
    """The fuzzer's seed 401393: with loop unrolling on, LLVM's loop vectoriser hit an assertion and
    aborted the whole process (no exception a caller could catch).  Run in a subprocess, so that
    a regression fails this test instead of killing the test run; the case checks cpu against ref
    and the NPU bit for bit."""
    import os
    case = os.path.join(os.path.dirname(__file__), "cases", "llvm_unroll_abort_401393.py")
    env = dict(os.environ, TRITONPU_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, case], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().startswith("seed 401393: ok"), proc.stdout


def test_a_long_sort_network_compiles_quickly_enough_to_run():
    """A 64x128 fp32 tl.sort: the loop unroller once took over a minute on its network; the result
    must equal numpy's either way (the compile time itself is a bench/ figure, not a test)."""
    @tritonpu.jit
    def sort_rows(x_ptr, o_ptr, R: tl.constexpr, N: tl.constexpr):
        r, c = tl.arange(0, R)[:, None], tl.arange(0, N)[None, :]
        tl.store(o_ptr + r * N + c, tl.sort(tl.load(x_ptr + r * N + c), dim=1))

    x = np.random.default_rng(0).random((64, 128)).astype(np.float32)
    o = np.zeros_like(x)
    sort_rows[(1,)](x, o, R=64, N=128, backend="cpu")
    np.testing.assert_array_equal(o, np.sort(x, 1))

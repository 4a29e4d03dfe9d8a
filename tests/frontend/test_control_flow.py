"""Control flow, constexprs, inlined @jit calls, debugging builtins and launch-time API.

Values are checked against Python/numpy exactly (ints) or with fp32 1e-5 tolerances; IR-shape claims
(a constexpr if is folded, a static_range is unrolled, a helper is inlined) are checked on the IR text.
"""
from __future__ import annotations

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tpu_util import assert_close, rand


def ir_ops(handle) -> list[str]:
    """Op names of the launch's IR, in text order."""
    out = []
    for line in handle.asm["ir"].splitlines()[2:]:
        body = line.strip()
        if not body or body.startswith(("}", "^bb", "#f", "func")):
            continue
        rhs = body.split(" = ", 1)[1] if " = " in body.split(" {")[0].split(" loc(")[0] else body
        out.append(rhs.split(" ")[0])
    return out


# ---------------------------------------------------------------------------------------------
# loops
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def for_kernel(out_ptr, lo, hi, step, KIND: tl.constexpr):
    acc = 0
    cnt = tl.zeros((16,), dtype=tl.float32)
    if KIND == "range":
        for i in range(lo, hi, step):
            acc += i
            cnt += 1.0
    elif KIND == "tl_range":
        for i in tl.range(lo, hi, step, num_stages=2):
            acc = acc + i * 2
            cnt = cnt + 0.5
    elif KIND == "static":
        for i in tl.static_range(0, 10, 3):
            acc += i
            cnt += 1.0
    elif KIND == "nested":
        for i in range(lo, hi):
            for j in range(0, i):
                acc += j
        cnt += 1.0
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1 + tl.arange(0, 16), cnt.to(tl.int32))


@pytest.mark.parametrize("lo,hi,step", [(0, 10, 1), (3, 17, 4), (10, 0, -1), (10, -7, -3), (5, 5, 1), (7, 2, 1),
                                        (-4, 4, 2)])
@pytest.mark.parametrize("kind", ["range", "tl_range"])
def test_runtime_range(lo, hi, step, kind):
    out = np.zeros(17, np.int32)
    h = for_kernel[(1,)](out, lo, hi, step, KIND=kind)
    it = list(range(lo, hi, step))
    mult = 1 if kind == "range" else 2
    assert out[0] == mult * sum(it)
    assert (out[1:] == int(len(it) * (1 if kind == "range" else 0.5))).all()
    assert "for" in ir_ops(h)


def test_static_range_is_unrolled():
    out = np.zeros(17, np.int32)
    h = for_kernel[(1,)](out, 0, 0, 1, KIND="static")
    assert out[0] == sum(range(0, 10, 3)) and out[1] == 4
    assert "for" not in ir_ops(h) and "if" not in ir_ops(h)


def test_nested_loops():
    out = np.zeros(17, np.int32)
    for_kernel[(1,)](out, 2, 6, 1, KIND="nested")
    assert out[0] == sum(j for i in range(2, 6) for j in range(i))


@tritonpu.jit
def while_kernel(out_ptr, n):
    i = 0
    total = 0.0
    while i < n:
        total += i * 0.5
        i += 1
    tl.store(out_ptr, total)
    tl.store(out_ptr + 1, i.to(tl.float32))
    # collatz steps of n: a data-dependent trip count
    x = n
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr + 2, steps.to(tl.float32))


def _collatz(n):
    s = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return s


@pytest.mark.parametrize("n", [1, 7, 27])
def test_while_loop_carries_values(n):
    out = np.zeros(3, np.float32)
    h = while_kernel[(1,)](out, n)
    assert out.tolist() == [sum(i * 0.5 for i in range(n)), n, _collatz(n)]
    assert "while" in ir_ops(h)


@tritonpu.jit
def loop_tensor_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    mx = tl.full((BLOCK,), float("-inf"), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc += x
        mx = tl.maximum(mx, tl.where(offs < n, x, float("-inf")))
    tl.store(out_ptr, tl.sum(acc, axis=0))
    tl.store(out_ptr + 1, tl.max(mx, axis=0))


@pytest.mark.parametrize("n", [16, 100, 1000])
def test_loop_carrying_blocks(n):
    x = rand(n, np.float32, seed=n)
    out = np.zeros(2, np.float32)
    loop_tensor_kernel[(1,)](x, out, n, BLOCK=128)
    assert_close(out, np.array([x.astype(np.float64).sum(), x.max()], np.float32), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# if / else
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def if_kernel(x_ptr, out_ptr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if MODE == "static_a":
        y = x + 1
    else:
        y = x - 1
    if x > 0:
        z = y * 2
        w = 1
    elif x == 0:
        z = y
        w = 2
    else:
        z = -y
        w = 3
    r = x if x > 5 else 5          # runtime conditional expression
    if (x > -3 and x < 3) or x == 10:
        w += 10
    tl.store(out_ptr + pid * 3, z)
    tl.store(out_ptr + pid * 3 + 1, w)
    tl.store(out_ptr + pid * 3 + 2, r)


def test_if_else_runtime_scalars():
    x = np.array([4, 0, -7, 10, 2, 9], np.int32)
    out = np.zeros(18, np.int32)
    if_kernel[(6,)](x, out, MODE="static_a")
    exp = []
    for v in x.tolist():
        y = v + 1
        z, w = (y * 2, 1) if v > 0 else ((y, 2) if v == 0 else (-y, 3))
        if (-3 < v < 3) or v == 10:
            w += 10
        exp += [z, w, max(v, 5)]
    assert out.tolist() == exp


@tritonpu.jit
def constexpr_if_kernel(out_ptr, FLAG: tl.constexpr, N: tl.constexpr = 4):
    if FLAG:
        v = tl.full((N,), 1, tl.int32)
    else:
        v = tl.full((N,), 2, tl.int32)
    if N > 2 and FLAG is not None:
        v = v * 10
    tl.store(out_ptr + tl.arange(0, N), v)


@pytest.mark.parametrize("flag,expect", [(True, 10), (False, 20)])
def test_constexpr_if_is_folded(flag, expect):
    out = np.zeros(4, np.int32)
    h = constexpr_if_kernel[(1,)](out, FLAG=flag)
    assert out.tolist() == [expect] * 4
    assert "if" not in ir_ops(h)
    assert " if " not in h.asm["ir"]
    assert f"FLAG = {'true' if flag else 'false'}" in h.asm["ir"].splitlines()[1]


@tritonpu.jit
def early_return_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_early_return():
    x = np.arange(40, dtype=np.float32)
    out = np.full(64, -1, np.float32)
    early_return_kernel[(8,)](x, out, 40, BLOCK=16)      # programs 3..7 return immediately
    assert_close(out[:40], x + 1)
    assert (out[40:] == -1).all()


# ---------------------------------------------------------------------------------------------
# calls to other @jit functions
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def _square(x):
    return x * x


@tritonpu.jit
def _affine(x, a, b: tl.constexpr = 3):
    return _square(x) * a + b


@tritonpu.jit
def _pair(x):
    return x + 1, x - 1


@tritonpu.jit
def _store_twice(ptr, v):
    tl.store(ptr, v)
    tl.store(ptr + 1, v)


@tritonpu.jit
def call_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = _affine(x, 2.0)
    p, m = _pair(x)
    tl.store(out_ptr + offs, y)
    tl.store(out_ptr + BLOCK + offs, p * m)
    _store_twice(out_ptr + 2 * BLOCK, tl.sum(x, axis=0))
    tl.store(out_ptr + 2 * BLOCK + 2, _affine(2.0, 1.0, b=5))


def test_jit_calls_are_inlined():
    x = rand(16, np.float32)
    out = np.zeros(35, np.float32)
    h = call_kernel[(1,)](x, out, BLOCK=16)
    assert_close(out[:16], x * x * 2 + 3)
    assert_close(out[16:32], (x + 1) * (x - 1))
    assert_close(out[32:34], np.full(2, x.sum()), atol=1e-4)
    assert out[34] == 9.0
    assert set(ir_ops(h)) <= set(tritonpu.ir.OPS)
    assert "func @call_kernel" in h.asm["ir"] and h.asm["ir"].count("func @") == 1


# ---------------------------------------------------------------------------------------------
# constexprs, attributes, static_assert, device_print
# ---------------------------------------------------------------------------------------------
SCALE = tl.constexpr(3)
OFFSET = 7


@tritonpu.jit
def attrs_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.static_assert(x.dtype == tl.float16)
    tl.static_assert(x_ptr.dtype.element_ty == tl.float16)
    tl.static_assert(out_ptr.dtype.element_ty == tl.int32, "out must be int32")
    tl.static_assert(x.shape[0] == M and x.shape[1] == N)
    tl.static_assert(len(x.shape) == 2)
    tl.static_assert(x.type.element_ty == tl.float16)
    tl.static_assert(x.numel == M * N)
    y = x.to(tl.float32) * SCALE + OFFSET
    tl.static_assert(y.dtype == tl.float32)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], y.to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + M * N, x.shape[0] * 100 + x.shape[1])


def test_dtype_shape_attributes_and_globals():
    x = rand((4, 8), np.float16, lo=0, hi=10).round()
    out = np.zeros(33, np.int32)
    attrs_kernel[(1,)](x, out, M=4, N=8)
    np.testing.assert_array_equal(out[:32], (x.astype(np.float32) * 3 + 7).astype(np.int32).reshape(-1))
    assert out[32] == 408


@tritonpu.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x: ", x)
    tl.device_print("pid", tl.program_id(0))
    tl.static_print("static", BLOCK)


@pytest.mark.parametrize("backend", ["ref", "npu"])
def test_device_print(capsys, backend):
    x = np.arange(4, dtype=np.int32)
    print_kernel[(2,)](x, BLOCK=4, backend=backend)
    out = capsys.readouterr().out
    if backend == "ref":
        assert "static 4" in out          # static_print runs once, at compile time
    assert "pid (0, 0, 0) x: [0, 1, 2, 3]" in out
    assert "pid (1, 0, 0) pid1" in out.replace(" 1\n", "1\n") or "pid (1, 0, 0) pid 1" in out


@tritonpu.jit
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "x must be non-negative")


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_device_assert(backend):
    assert_kernel[(1,)](np.arange(4, dtype=np.int32), BLOCK=4, backend=backend, debug=True)
    with pytest.raises(tritonpu.ExecutionError, match="x must be non-negative") as info:
        assert_kernel[(1,)](np.array([0, 1, -1, 2], np.int32), BLOCK=4, backend=backend, debug=True)
    assert info.value.line is not None and "tl.device_assert" in str(info.value)


@tritonpu.jit(debug=True)
def assert_kernel_debug(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "x must be non-negative", mask=tl.arange(0, BLOCK) < 3)


@pytest.mark.parametrize("backend", ["ref", "npu", "cpu"])
def test_device_assert_is_checked_only_in_debug_mode_as_in_triton(backend, monkeypatch):
    """Triton checks device_assert only with TRITON_DEBUG (or debug=True); tritonpu checked it always,
    so a kernel that runs on Triton failed here."""
    bad = np.array([0, 1, -1, 2], np.int32)
    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    assert_kernel[(1,)](bad, BLOCK=4, backend=backend)                        # off: nothing
    assert_kernel[(1,)](bad, BLOCK=4, backend=backend, debug=False)
    monkeypatch.setenv("TRITON_DEBUG", "1")
    with pytest.raises(tritonpu.ExecutionError, match="x must be non-negative"):
        assert_kernel[(1,)](bad, BLOCK=4, backend=backend)
    assert_kernel[(1,)](bad, BLOCK=4, backend=backend, debug=False)          # the launch's word wins
    monkeypatch.setenv("TRITON_DEBUG", "0")
    with pytest.raises(tritonpu.ExecutionError, match="x must be non-negative"):  # @jit(debug=True)
        assert_kernel_debug[(1,)](bad, BLOCK=4, backend=backend)
    assert_kernel_debug[(1,)](np.array([0, 1, 2, -5], np.int32), BLOCK=4, backend=backend)  # masked off


@tritonpu.jit
def print_2d_kernel(x_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    tl.device_print("tile ", x, x > 2)
    tl.device_print("sum ", tl.sum(x, axis=1), tl.sum(x.to(tl.float32), axis=0))


def test_device_print_2d_and_several_values_match_the_reference(capsys):
    x = np.arange(8, dtype=np.int32)
    print_2d_kernel[(1,)](x, R=2, C=4, backend="ref")
    ref = capsys.readouterr().out
    print_2d_kernel[(1,)](x, R=2, C=4, backend="npu")
    npu = capsys.readouterr().out
    assert npu == ref
    assert "pid (0, 0, 0) tile [[0, 1, 2, 3], [4, 5, 6, 7]] [[False, False, False, True], [True, True, True, True]]" \
        in npu


# ---------------------------------------------------------------------------------------------
# launch API: options, grid lambdas, autotune, heuristics
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)


def test_launch_options_and_grid_lambda():
    x = rand(100, np.float32)
    out = np.zeros(100, np.float32)
    grid = lambda meta: (tritonpu.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    h = scale_kernel[grid](x, out, 100, 2.0, BLOCK=16, num_warps=8, num_stages=3, num_ctas=1)
    assert_close(out, x * 2)
    assert h.grid == (7, 1, 1)
    scale_kernel[(tritonpu.cdiv(100, 32), 1, 1)](x, out, n=100, factor=-1.0, BLOCK=32)
    assert_close(out, -x)
    scale_kernel[7](x, out, 100, 3, BLOCK=16)          # an int grid, an int factor
    assert_close(out, x * 3)


def test_autotune_and_heuristics():
    configs = [tritonpu.Config({"BLOCK": 32}, num_warps=4), tritonpu.Config({"BLOCK": 64}, num_warps=8, num_stages=3)]
    tuned = tritonpu.autotune(configs=configs, key=["n"])(scale_kernel)
    x = rand(100, np.float32)
    out = np.zeros(100, np.float32)
    tuned[lambda meta: (tritonpu.cdiv(meta["n"], meta["BLOCK"]),)](x, out, 100, 4.0)
    assert_close(out, 4 * x)
    assert tuned.best_config.kwargs["BLOCK"] in (32, 64)
    assert "BLOCK: 32" in repr(configs[0]) and configs[1].num_stages == 3

    heur = tritonpu.heuristics({"BLOCK": lambda args: tritonpu.next_power_of_2(args["n"]) // 4})(scale_kernel)
    out[:] = 0
    h = heur[lambda meta: (tritonpu.cdiv(meta["n"], meta["BLOCK"]),)](x, out, 100, 5.0)
    assert_close(out, 5 * x)
    assert "BLOCK = 32" in h.asm["ir"]


# ---------------------------------------------------------------------------------------------
# early returns: nested, under constexpr ifs, in else-branches, with values in inlined helpers
# ---------------------------------------------------------------------------------------------
@tritonpu.jit
def _relu_or_shift(x):
    if x > 0:
        return x * 2.0
    return x - 1.0


@tritonpu.jit
def _sign_pair(x):
    if x > 0:
        return 1, x
    elif x < 0:
        return -1, -x
    else:
        return 0, x


@tritonpu.jit
def returns_kernel(x_ptr, out_ptr, n, FLAG: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(out_ptr + pid * 4, _relu_or_shift(x))
    s, a = _sign_pair(x)
    tl.store(out_ptr + pid * 4 + 1, s.to(tl.float32))
    tl.store(out_ptr + pid * 4 + 2, a)
    if FLAG:                      # constexpr if around a runtime early return: the rest still runs
        if x > 100.0:
            return
        y = x + 0.5
    else:
        y = x
    if pid >= n:
        tl.store(out_ptr + pid * 4 + 3, -1.0)
    else:
        return
    tl.store(out_ptr + pid * 4 + 3, y)   # only reached when pid >= n (the else-branch returned)


def test_early_returns():
    x = np.array([3.0, -2.0, 0.0, 200.0, 7.0], np.float32)
    out = np.full(20, 9.0, np.float32)
    h = returns_kernel[(5,)](x, out, 2, FLAG=True)
    out = out.reshape(5, 4)
    assert out[:, 0].tolist() == [6.0, -3.0, -1.0, 400.0, 14.0]
    assert out[:, 1].tolist() == [1, -1, 0, 1, 1]
    assert out[:, 2].tolist() == [3.0, 2.0, 0.0, 200.0, 7.0]
    assert out[:, 3].tolist() == [9.0, 9.0, 0.5, 9.0, 7.5]
    assert "if" in ir_ops(h)


@tritonpu.jit
def _bad_mixed_return(x):
    if x > 0:
        return x
    return x.to(tl.int32)


@tritonpu.jit
def bad_return_kernel(out_ptr):
    tl.store(out_ptr, _bad_mixed_return(tl.load(out_ptr)))


def test_early_return_type_mismatch_is_reported():
    with pytest.raises(tritonpu.CompilationError, match="the function returns f32 in one branch and i32 in the "
                                                        "other; cast so both returns have one type"):
        bad_return_kernel[(1,)](np.zeros(1, np.float32))


@tritonpu.jit
def _same_in_both_branches(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    k = 5
    if n > 1:
        a, b = b, a
        k = 7
        c = a
    else:
        a, b = b, a
        k = 7
        c = a
    tl.store(o_ptr + offs, a)
    tl.store(o_ptr + BLOCK + offs, b)
    tl.store(o_ptr + 2 * BLOCK + offs, c + k)


@pytest.mark.parametrize("backend", ["ref", "cpu", "npu"])
def test_a_name_both_branches_rebind_to_the_same_value_takes_it(backend):
    """Both branches of a runtime if set a name to one value made before the if (the same swap, the
    same constant): the name was left at its value from before the if (a silent wrong result on
    every backend), or undefined when new (`c`)."""
    B = 16
    a = np.arange(B, dtype=np.int32)
    b = a + 100
    o = np.zeros(3 * B, np.int32)
    _same_in_both_branches[(1,)](a, b, o, 2, BLOCK=B, backend=backend)
    np.testing.assert_array_equal(o, np.concatenate([b, a, b + 7]))


@tritonpu.jit
def _tuple_carry_kernel(x_ptr, out_ptr, T, BN: tl.constexpr):
    st = (x_ptr, tl.zeros((BN,), tl.float32))
    for i in range(3):
        st = (st[0] + BN, st[1] + tl.load(st[0] + tl.arange(0, BN)))
    pair = (0, 1)
    k = 0
    while k < T:
        pair = (pair[1], pair[0] + pair[1])
        k += 1
    nested = ((1, 2.0), tl.full((BN,), 3.0, tl.float32))
    for i in range(T):
        nested = ((nested[0][0] * 2, nested[0][1] + 0.5), nested[1] * 2)
    tl.store(out_ptr + tl.arange(0, BN), st[1] + pair[1] + nested[0][0] + nested[0][1] + nested[1])


@pytest.mark.parametrize("backend", ["ref", "cpu", "npu"])
def test_a_tuple_reassigned_in_a_loop_is_carried(backend):
    """Before, only tensors, numbers and block pointers were carried: a tuple's updates were dropped
    silently and the tuple from before the loop came back (0 instead of 48..57)."""
    BN, T = 16, 4
    x = np.arange(48, dtype=np.float32)
    out = np.full(BN, -1, np.float32)
    _tuple_carry_kernel[(1,)](x, out, T, BN=BN, backend=backend)
    fib = [0, 1]
    for _ in range(T):
        fib = [fib[1], fib[0] + fib[1]]
    want = x.reshape(3, BN).sum(0) + fib[1] + 2 ** T + (2.0 + 0.5 * T) + 3.0 * 2 ** T
    np.testing.assert_array_equal(out, want.astype(np.float32))


@tritonpu.jit
def _if_block_ptr_kernel(x_ptr, out_ptr, N, T, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (BN,), (0,))
    pair = (x_ptr, 0)
    for i in range(T):
        if i > 0:
            p = tl.advance(p, (BN,))
            pair = (pair[0] + BN, pair[1] + 1)
    tl.store(out_ptr + tl.arange(0, BN), tl.load(p, boundary_check=(0,)) + tl.load(pair[0] + tl.arange(0, BN))
             + pair[1])


@pytest.mark.parametrize("backend", ["ref", "cpu", "npu"])
@pytest.mark.parametrize("T", [1, 2, 3])
def test_a_runtime_if_merges_block_pointers_and_tuples(backend, T):
    """Before: 'a runtime tensor has no Python truth value here' at the `if` (its branches' block
    pointers were compared with !=)."""
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(16, np.float32)
    _if_block_ptr_kernel[(1,)](x, out, 64, T, BN=16, backend=backend)
    row = x[16 * (T - 1):16 * T]
    np.testing.assert_array_equal(out, 2 * row + (T - 1))


@tritonpu.jit
def _tuple_reshaped_kernel(out_ptr, T):
    st = (1, 2)
    for i in range(T):
        st = (st[0], st[1], 3)
    tl.store(out_ptr, st[0])


@tritonpu.jit
def _string_reassigned_kernel(out_ptr, T):
    tag = "a"
    for i in range(T):
        tag = "b"  # noqa: F841  (what the compiler must refuse)
    tl.store(out_ptr, T)


def test_a_loop_refuses_what_it_cannot_carry_instead_of_dropping_it():
    with pytest.raises(tritonpu.CompilationError) as e:
        _tuple_reshaped_kernel[(1,)](np.zeros(1, np.int32), 3, backend="ref")
    assert e.value.message == ("loop-carried tuple `st` must keep its structure (the same number of elements, "
                               "each a tensor or number where it had one)")
    with pytest.raises(tritonpu.CompilationError) as e:
        _string_reassigned_kernel[(1,)](np.zeros(1, np.int32), 3, backend="ref")
    assert e.value.message == ("`tag` is re-assigned in the loop to a str value, which a loop cannot carry (it "
                               "carries tensors, numbers, block pointers and tuples of them); compute it before "
                               "the loop")


@tritonpu.jit
def _runtime_step_kernel(o_ptr, step):
    acc = 0
    for i in range(0, 10, step):
        acc += 1
    tl.store(o_ptr, acc)


@pytest.mark.parametrize("backend", ["ref", "cpu", "npu"])
def test_a_runtime_step_of_zero_stops_the_launch_on_every_backend(backend):
    """Before: ref raised Python's ValueError from inside the evaluator, cpu ran no trip silently."""
    o = np.full(1, -1, np.int32)
    with pytest.raises(tritonpu.ExecutionError, match="for loop with step 0") as e:
        _runtime_step_kernel[(1,)](o, 0, backend=backend)
    assert e.value.line is not None and e.value.line > 0
    _runtime_step_kernel[(1,)](o, 3, backend=backend)
    assert o[0] == 4

"""tl.dot on the NPU's cube path against the reference evaluator: shapes 16..128 per dimension,
ragged (masked) sizes, transposed operands, acc=, fp16/bf16/fp32/int8 inputs, chained dots."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tpu_util import cube_product

BF16 = np.dtype(ml_dtypes.bfloat16)


@tritonpu.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr, ACC: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if TRANS_A:     # A stored K x M
        a = tl.trans(tl.load(a_ptr + rk[:, None] * M + rm[None, :], mask=(rk[:, None] < K) & (rm[None, :] < M),
                             other=0))
    else:
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
    if TRANS_B:     # B stored N x K
        b = tl.trans(tl.load(b_ptr + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K),
                             other=0))
    else:
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    if ACC:
        c = tl.dot(a, b, acc=tl.load(c_ptrs, mask=c_mask, other=0))
    else:
        c = tl.dot(a, b)
    tl.store(c_ptrs, c.to(c_ptr.dtype.element_ty), mask=c_mask)


def _run(M, N, K, dt, out_dt, trans_a=False, trans_b=False, acc=False, block=None, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "i":
        a = rng.integers(-8, 8, (M, K)).astype(dt)
        b = rng.integers(-8, 8, (K, N)).astype(dt)
        c0 = rng.integers(-100, 100, (M, N)).astype(out_dt)
    else:
        a = rng.standard_normal((M, K)).astype(dt)
        b = rng.standard_normal((K, N)).astype(dt)
        c0 = rng.standard_normal((M, N)).astype(out_dt)
    BM, BN, BK = block or [max(16, 1 << (x - 1).bit_length()) for x in (M, N, K)]
    outs = {}
    for backend in ("ref", "npu"):
        c = c0.copy() if acc else np.zeros((M, N), out_dt)
        a_in = np.ascontiguousarray(a.T) if trans_a else a
        b_in = np.ascontiguousarray(b.T) if trans_b else b
        h = dot_kernel[(1,)](a_in, b_in, c, M, N, K, TRANS_A=trans_a, TRANS_B=trans_b, ACC=acc, BM=BM, BN=BN, BK=BK,
                             backend=backend)
        outs[backend] = (c, h)
    return outs


def _close(got, want, dt):
    if np.dtype(dt).kind == "i":
        np.testing.assert_array_equal(got, want)
    else:
        tol = {np.dtype(np.float32): 1e-4, np.dtype(np.float16): 2e-2, BF16: 5e-2}[np.dtype(dt)]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (32, 64, 16), (64, 32, 128), (128, 128, 64), (128, 16, 128)])
@pytest.mark.parametrize("dt,out_dt", [(np.float32, np.float32), (np.float16, np.float32), (np.float16, np.float16),
                                       (BF16, np.float32), (np.int8, np.int32)])
def test_dot_shapes_and_dtypes(M, N, K, dt, out_dt):
    outs = _run(M, N, K, dt, out_dt)
    _close(outs["npu"][0], outs["ref"][0], out_dt)
    h = outs["npu"][1]
    assert "mmad." in h.asm["isa"] and h.stats.pipe_busy["cube"] > 0


@pytest.mark.parametrize("M,N,K", [(13, 50, 20), (100, 7, 33), (1, 1, 1), (65, 127, 100)])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_dot_ragged_sizes(M, N, K, dt):
    outs = _run(M, N, K, dt, np.float32, seed=M)
    _close(outs["npu"][0], outs["ref"][0], dt)


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_dot_transposed_operands(trans_a, trans_b, dt):
    outs = _run(48, 40, 24, dt, np.float32, trans_a=trans_a, trans_b=trans_b, block=(64, 64, 32))
    _close(outs["npu"][0], outs["ref"][0], dt)


@pytest.mark.parametrize("dt,out_dt", [(np.float32, np.float32), (np.float16, np.float32), (np.int8, np.int32)])
def test_dot_with_acc(dt, out_dt):
    outs = _run(32, 48, 40, dt, out_dt, acc=True, block=(32, 64, 64))
    _close(outs["npu"][0], outs["ref"][0], out_dt)


@tritonpu.jit
def chained_kernel(a_ptr, b_ptr, d_ptr, out_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr,
                   P: tl.constexpr):
    rm, rk, rn, rp = tl.arange(0, M), tl.arange(0, K), tl.arange(0, N), tl.arange(0, P)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    d = tl.load(d_ptr + rn[:, None] * P + rp[None, :])
    ab = tl.dot(a, b)                                  # M x N, fp32
    e = tl.exp(ab * 0.05)                              # vector work between the dots
    out = tl.dot(e.to(tl.float16), d)                  # M x P
    out = tl.dot(tl.trans(out).to(tl.float16), a, acc=tl.zeros((P, K), tl.float32))   # P x K
    tl.store(out_ptr + rp[:, None] * K + rk[None, :], out)


def test_chained_dots_with_vector_work_between():
    rng = np.random.default_rng(3)
    M, K, N, P = 32, 16, 64, 32
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((K, N)) * 0.5).astype(np.float16)
    d = (rng.standard_normal((N, P)) * 0.1).astype(np.float16)
    outs = {}
    for backend in ("ref", "npu"):
        out = np.zeros((P, K), np.float32)
        chained_kernel[(1,)](a, b, d, out, M=M, K=K, N=N, P=P, backend=backend)
        outs[backend] = out
    np.testing.assert_allclose(outs["npu"], outs["ref"], rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("M,N,K,dt", [(128, 128, 256, np.float32), (256, 64, 128, np.float32),
                                      (64, 128, 1024, np.float16), (128, 128, 512, np.float16)])
def test_dots_bigger_than_l0_are_split_into_l0_tiles(M, N, K, dt):
    outs = _run(M, N, K, dt, np.float32, block=(M, N, K))
    _close(outs["npu"][0], outs["ref"][0], dt)
    assert outs["npu"][1].asm["isa"].count("mmad.") > 1


def test_a_dot_whose_result_does_not_fit_on_chip_is_a_compilation_error_at_the_dot():
    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    with pytest.raises(tritonpu.CompilationError) as info:
        dot_kernel[(1,)](a, a, c, 256, 256, 32, TRANS_A=False, TRANS_B=False, ACC=False, BM=256, BN=256, BK=32)
    text = str(info.value)
    # (the product is only stored: FIX would store it from L0C, which it does not fit either)
    assert "of L0C at once" in text and "tensor<256x256xf32>" in text and "it fits with BM=128" in text and \
        "c = tl.dot(a, b)" in text


@tritonpu.jit
def _mm_epilogue(a_ptr, b_ptr, c_ptr, M, N, K, EPI: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    if EPI:
        acc = acc * 2.0
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("k_trips", [1, 2, 3, 5])
def test_k_loop_accumulator_stays_in_l0c_through_the_odd_last_trip(k_trips, epilogue):
    # double buffering unrolls the K loop; the launch gives its trip count (a guard), so its last
    # trips run after it as straight-line code: their dots accumulate into the same L0C tile.
    # Stored as it is, FIX writes the accumulator to GM straight from L0C, once; with vector work
    # after it, FIX drains it to UB once.
    rng = np.random.default_rng(k_trips)
    M, N, K = 100, 64, 32 * k_trips - 3                  # ragged M and K
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)

    def run(**kw):
        c = np.zeros((M, N), np.float32)
        h = _mm_epilogue[(2, 1)](a, b, c, M, N, K, EPI=epilogue, BM=64, BN=64, BK=32, **kw)
        return c, h
    c, h = run()
    ir, isa = h.asm["buffer-planning"], h.asm["isa"]      # (h.asm shows the latest launch's stages)
    c_off, _ = run(double_buffer=False)
    assert c.tobytes() == c_off.tobytes()
    ref = a.astype(np.float32) @ b.astype(np.float32) * (2 if epilogue else 1)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
    if k_trips == 1:        # the launch's K makes one trip: versioning leaves no K loop at all
        assert "single_trip = true" in ir
        return
    assert 'double_buffer = "on' in ir
    tail = [ln for ln in ir.splitlines() if "= dot " in ln and "l0c = 0" not in ln]
    # every dot accumulates in L0C -- the chain's last, read by vector work, may be drained to UB by
    # FIX as it is made (a loop without panel versions: its result is not yielded out of an if)
    assert len(tail) <= int(epilogue) and all("{ub = " in ln for ln in tail), tail
    if epilogue:
        # once in each version of the K loop (one per L1 panel, see passes/panel_reuse.py, whose
        # panels hold every trip here)
        versions = max(1, h.asm["panel-reuse"].count('panel = "'))
        assert isa.count("mov.l0c.ub") == versions, isa
        assert "mov.l0c.gm" not in isa
    else:
        assert isa.count("mov.l0c.gm") == 1 and "mov.l0c.ub" not in isa, isa
        assert "mov.ub.gm" not in isa                   # no UB copy of the result, no MTE3


def test_a_warm_relaunch_reports_the_same_profile():
    # a relaunch with arrays of the same sizes reuses the decoded program: its statistics (MACs,
    # the roofline's bound, bytes) must start from zero again, not from stale accumulators
    a = np.ones((64, 32), np.float16)
    b = np.ones((32, 64), np.float16)
    stats = []
    for _ in range(3):
        c = np.zeros((64, 64), np.float32)
        h = dot_kernel[(1,)](a, b, c, 64, 64, 32, TRANS_A=False, TRANS_B=False, ACC=False, BM=64, BN=64, BK=32,
                             sanitize=False)
        s = h.stats
        stats.append((s.cube_macs, s.roofline_bound, s.cycles, dict(s.bytes_by_path), s.read_bytes))
        assert np.array_equal(c, np.full((64, 64), 32, np.float32))
    assert stats[0][0] == 64 * 64 * 32
    assert stats[1] == stats[0] and stats[2] == stats[0]


@tritonpu.jit
def _attention_no_softmax(Q, K, V, O, L: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
    # every program's inner loop starts from the same K/V block: the program loop's unrolled copies
    # both prefetch it into L1 (dot operands), each into its own loop's carried buffer
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    for start in range(0, L, BLOCK):
        rn = start + tl.arange(0, BLOCK)
        k = tl.load(K + rn[:, None] * D + rd[None, :])
        v = tl.load(V + rn[:, None] * D + rd[None, :])
        qk = tl.dot(q, tl.trans(k))
        acc += tl.dot(qk.to(tl.float16), v)
    tl.store(O + rm[:, None] * D + rd[None, :], acc)


@pytest.mark.parametrize("double_buffer", [True, False])
def test_inner_loops_of_a_pipelined_program_loop_start_from_a_shared_l1_block(double_buffer):
    L, D, BLOCK = 128, 64, 32
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((L, D)).astype(np.float16) for _ in range(3))
    o = np.empty((L, D), np.float32)
    _attention_no_softmax[(L // BLOCK,)](q, k, v, o, L=L, D=D, BLOCK=BLOCK, double_buffer=double_buffer)
    p = (q.astype(np.float32) @ k.astype(np.float32).T).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(o, p @ v.astype(np.float32), rtol=1e-3, atol=1e-2)


@tritonpu.jit
def _batched_dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # rank-3 operands made by reshaping 2-D loads (rank-3 pointer blocks do not run on the NPU yet)
    a = tl.load(a_ptr + tl.arange(0, B * M)[:, None] * K + tl.arange(0, K)[None, :]).reshape(B, M, K)
    b = tl.load(b_ptr + tl.arange(0, B * K)[:, None] * N + tl.arange(0, N)[None, :]).reshape(B, K, N)
    c = tl.dot(a, b)
    c = tl.dot(a, b, acc=c)
    tl.store(c_ptr + tl.arange(0, B * M)[:, None] * N + tl.arange(0, N)[None, :], c.reshape(B * M, N))


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
@pytest.mark.parametrize("B,M,N,K,dt", [(4, 16, 32, 16, np.float16), (2, 32, 16, 64, np.float32),
                                         (1, 16, 16, 16, np.float32)])
def test_batched_dot_is_one_dot_per_batch_entry(B, M, N, K, dt, backend):
    rng = np.random.default_rng(B * M)
    a, b = rng.standard_normal((B, M, K)).astype(dt), rng.standard_normal((B, K, N)).astype(dt)
    c = np.zeros((B, M, N), np.float32)
    _batched_dot[(1,)](a, b, c, B=B, M=M, N=N, K=K, backend=backend)
    np.testing.assert_allclose(c, 2 * np.matmul(a.astype(np.float32), b.astype(np.float32)), rtol=1e-4, atol=1e-4)


@tritonpu.jit
def _batched_k_loop(a_ptr, b_ptr, c_ptr, K, BB: tl.constexpr, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
    rb, rm, rn, rk = tl.arange(0, BB), tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    base = tl.program_id(0) * BB
    acc = tl.zeros((BB, M, N), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + (base + rb)[:, None, None] * (M * K) + rm[None, :, None] * K + (k0 + rk)[None, None, :])
        b = tl.load(b_ptr + (base + rb)[:, None, None] * (K * N) + (k0 + rk)[None, :, None] * N + rn[None, None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + (base + rb)[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], acc)


def test_a_batched_dot_in_a_k_loop_takes_each_entry_as_a_view():
    """The batch entries are slices of the operands and the products are written in with
    insert_slice (before, each entry was picked by a sum over the batch with the others zeroed, and
    the products put back by selects: this config needed 204864 bytes of UB)."""
    Bt, BB, M, N, K, BK = 8, 4, 64, 64, 128, 32
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((Bt, M, K)).astype(np.float16), rng.standard_normal((Bt, K, N)).astype(np.float16)
    c = np.zeros((Bt, M, N), np.float32)
    h = _batched_k_loop[(Bt // BB,)](a, b, c, K, BB=BB, M=M, N=N, BK=BK)
    np.testing.assert_allclose(c, np.matmul(a.astype(np.float32), b.astype(np.float32)), rtol=1e-3, atol=1e-3)
    assert " reduce " not in h.asm["ir"] and h.asm["ir"].count("= dot ") == BB


@tritonpu.jit
def _dot_of_transposed_dot(q_ptr, k_ptr, dk_ptr, N, D: tl.constexpr, B: tl.constexpr):
    offs_n = tl.program_id(0) * B + tl.arange(0, B)
    offs_d = tl.arange(0, D)
    k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :])
    dk = tl.zeros((B, D), tl.float32)
    for start_m in range(0, N, B):
        q = tl.load(q_ptr + (start_m + tl.arange(0, B))[:, None] * D + offs_d[None, :])
        p = tl.dot(q, tl.trans(k))
        dk += tl.dot(tl.trans(p), q)
    tl.store(dk_ptr + offs_n[:, None] * D + offs_d[None, :], dk)


@pytest.mark.parametrize("double_buffer", [True, False])
@pytest.mark.parametrize("programs", [1, 2, 3])
def test_a_dot_of_a_transposed_dot_accumulated_in_a_loop(programs, double_buffer):
    # the flash-attention-2 backward pattern: regression for the program loop's L1-carried k tile,
    # whose tl.trans view after the loop (the odd last program) was not kept in L1 — the next load
    # took its buffer and the last program multiplied by q
    N, D, B = 64, 16, 16
    rng = np.random.default_rng(programs)
    q, k = (rng.standard_normal((N, D)).astype(np.float32) for _ in range(2))
    dk = np.zeros((N, D), np.float32)
    _dot_of_transposed_dot[(programs,)](q, k, dk, N, D=D, B=B, double_buffer=double_buffer)
    for g in range(programs):
        rows = slice(g * B, (g + 1) * B)
        np.testing.assert_allclose(dk[rows], (q @ k[rows].T).T @ q, rtol=1e-4, atol=1e-3)


@tritonpu.jit
def _one_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def test_a_dot_larger_than_half_of_l0b_alternates_the_halves():
    # 128 x 128 @ 128 x 256 fp16: B takes all 64 KiB of L0B; split along K into two products whose
    # tiles fit half of L0A and of L0B each, MTE1 fills one half while the cube reads the other
    M, N, K = 128, 256, 128
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = _one_dot[(1,)](a, b, c, M=M, N=N, K=K)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)
    isa = h.asm["isa"]
    assert sorted(set(re.findall(r"mov\.l1\.l0b\S* l0b\[(\d+)\]", isa))) == ["0", "32768"], isa
    # two products, each as two mmads over the row halves of its 128 x 256 fp32 result, which fills
    # L0C (codegen/l0c_halves.py: FIX drains the first half while the cube writes the second)
    assert isa.count("mmad") == 4, isa


@tritonpu.jit
def _kth_product(a_ptr, b_ptr, acc, k: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * (4 * K) + (k * K + rk)[None, :])
    b = tl.load(b_ptr + (k * K + rk)[:, None] * N + rn[None, :])
    return tl.dot(a, b, acc)


@tritonpu.jit
def _four_dots(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # straight-line code: four products written out (a static_range loop would be a loop)
    acc = tl.zeros((M, N), dtype=tl.float32)
    acc = _kth_product(a_ptr, b_ptr, acc, 0, M, N, K)
    acc = _kth_product(a_ptr, b_ptr, acc, 1, M, N, K)
    acc = _kth_product(a_ptr, b_ptr, acc, 2, M, N, K)
    acc = _kth_product(a_ptr, b_ptr, acc, 3, M, N, K)
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_small_l0_tiles_take_turns_over_four_slots():
    # four products of 64 x 64 (8 KiB of L0A) by 64 x 32 (4 KiB of L0B) fp16: four fit each, so
    # consecutive products use four slots in turn and MTE1 runs up to three products ahead
    M, N, K = 64, 32, 64
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, 4 * K)).astype(np.float16)
    b = rng.standard_normal((4 * K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    h = _four_dots[(1,)](a, b, c, M=M, N=N, K=K)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)
    isa = h.asm["isa"]
    assert re.findall(r"mmad\S* l0c\[(?:s\d+\+)?\d+\], l0a\[(\d+)\], l0b\[(\d+)\], \d+, [1-9]", isa) == \
        [("0", "0"), ("16384", "16384"), ("32768", "32768"), ("49152", "49152")], isa


@tritonpu.jit
def _mm_skipped(a_ptr, b_ptr, c_ptr, K, MLIM, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if pid * BM < MLIM:
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("opts", [{}, {"double_buffer": False}, {"disable_passes": ("panel-reuse",)}])
def test_zeros_a_branch_yields_when_it_skips_the_k_loop_stay_zeros(opts):
    # the zeros are made once, before the program loop; the branch that runs the K loop must not
    # drain its accumulator over them (a later program that skips the loop stored an earlier sum)
    M, N, K, BM, BN, BK, MLIM = 256, 64, 256, 64, 64, 32, 128
    rng = np.random.default_rng(0)
    a = (rng.random((M, K)) - 0.5).astype(np.float16)
    b = (rng.random((K, N)) - 0.5).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    ref[MLIM:] = 0
    c = np.full((M, N), 7.0, np.float32)
    _mm_skipped[(M // BM,)](a, b, c, K, MLIM, BM=BM, BN=BN, BK=BK, cores=1, **opts)
    assert not c[MLIM:].any()
    np.testing.assert_allclose(c, ref, atol=1e-3, rtol=1e-3)


@tritonpu.jit
def _linear_gelu(x_ptr, w_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 FORM: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x_ptrs = x_ptr + rm[:, None] * K + rk[None, :]
    w_ptrs = w_ptr + rk[:, None] * N + rn[None, :]
    if FORM == "loop":
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
            w = tl.load(w_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, w, acc)
            x_ptrs += BK
            w_ptrs += BK * N
    else:       # K in one block
        x = tl.load(x_ptrs, mask=rm[:, None] < M, other=0.0)
        w = tl.load(w_ptrs, mask=rn[None, :] < N, other=0.0)
        if FORM == "zeros":
            acc = tl.dot(x, w, tl.zeros((BM, BN), dtype=tl.float32))
        else:
            acc = tl.dot(x, w)
    acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("BN,form", [(128, "loop"), (128, "zeros"), (256, "loop"), (256, "zeros"), (256, "plain")])
def test_a_gelu_epilogue_of_a_dot_with_k_in_one_block_fits(BN, form):
    """A linear layer with a GELU epilogue whose K is one block (K = BK): the K loop runs once (the
    launch decides it: passes/versioning.py) or there is none.  Its accumulator of zeros was a
    64 KiB tile in UB and the product was added to it on the vector unit: 128x128x64 did not fit
    UB (200704 bytes).  The zeros are made in L0C, and a 128x256 product the epilogue reads a few
    rows at a time stays in L0C, FIX draining the rows (passes/epilogue_rows.py)."""
    M, N, K, BM = 200, 300, 64, 128
    rng = np.random.default_rng(1)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((K, N)).astype(np.float16)
    y = np.zeros((M, N), np.float32)
    h = _linear_gelu[(2, -(-N // BN))](x, w, y, M, N, K, BM=BM, BN=BN, BK=K, FORM=form)
    r = x.astype(np.float64) @ w.astype(np.float64)
    erf = np.vectorize(__import__("math").erf)
    np.testing.assert_allclose(y, 0.5 * r * (1 + erf(r / np.sqrt(2))), rtol=1e-4, atol=1e-4)
    # zeroed in L0C (at the ring register's half when the programs a core runs alternate halves)
    # (the zeros: a product over k = 0; at 128x256, which fills L0C, its first row half's -- the second
    # half is zeroed by its first product, codegen/l0c_halves.py)
    rows = 128 if BN == 128 else 64
    assert re.search(rf"mmad\.f32\.f16 l0c\[(s\d+\+)?0\], l0a\[0\], l0b\[0\], {rows}, 0, ", h.asm["isa"]) or \
        form == "plain"
    if BN == 256:
        starts = re.findall(r"= slice %\w+ \{offsets = \[(\d+), 0\][,}]", h.asm["epilogue-rows"])
        assert len(starts) >= 2 and starts[:2] == ["0", starts[1]], h.asm["epilogue-rows"]
        assert "mov.l0c.ub.f32.f32" in h.asm["isa"]


@tritonpu.jit
def _dot_from_zeros(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, tl.zeros((N, N), tl.float32)))


def test_a_product_of_negative_zeros_added_to_zeros_is_positive_zero():
    """``tl.dot(a, b, zeros)`` is ``zeros + a @ b``: a row whose products are all -0.0 gives +0.0,
    as on the reference backend, now that the zeros are made in L0C (a product over k = 0) rather
    than added on the vector unit."""
    a = np.ones((32, 32), np.float16)
    a[3] = -0.0
    outs = {}
    for backend in ("ref", "npu"):
        c = np.full((32, 32), 7.0, np.float32)
        h = _dot_from_zeros[(1,)](a, a.copy(), c, N=32, backend=backend)
        outs[backend] = c
    assert outs["npu"].tobytes() == outs["ref"].tobytes() and not np.signbit(outs["npu"][3]).any()
    isa = h.asm["isa"]
    assert re.search(r"mmad\.f32\.f16 l0c\[(s\d+\+)?0\], l0a\[0\], l0b\[0\], 32, 0, 32, init=1", isa) and \
        "vadd" not in isa, isa


@tritonpu.jit
def _dot_and_column_sums(x_ptr, w_ptr, y_ptr, ws_ptr, N, K, swn, swk,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    ws = tl.zeros((BN,), dtype=tl.float32)
    for kk in range(0, K // BK):
        x = tl.load(x_ptr + offs_m[:, None] * K + (kk * BK + offs_k)[None, :])
        w = tl.load(w_ptr + (kk * BK + offs_k)[:, None] * swk + offs_n[None, :] * swn)
        acc = tl.dot(x, w, acc)
        ws += tl.sum(w, axis=0)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc)
    if tl.program_id(0) == 0:
        tl.store(ws_ptr + offs_n, ws)


def test_a_column_major_operand_also_summed_is_bitwise_the_same_with_double_buffering_off():
    """W given as its transpose (rows not contiguous): a dot operand that is also reduced is read
    through a transposed view or as a dense copy, depending on double buffering; its fp32 column
    sums are the same bits either way, and the reference backend's."""
    M, N, K = 128, 128, 64
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(np.float32)
    W = rng.standard_normal((N, K)).astype(np.float32)           # w[k, n] = W[n, k]
    got = []
    for opts in ({}, {"double_buffer": False}, {"backend": "ref"}):
        y, ws = np.zeros((M, N), np.float32), np.zeros(N, np.float32)
        _dot_and_column_sums[(2, 2)](x, W, y, ws, N, K, K, 1, BM=64, BN=64, BK=32, **opts)
        got.append((y.tobytes(), ws.tobytes()))
    assert got[0][1] == got[1][1] == got[2][1] and got[0][0] == got[1][0]
    np.testing.assert_allclose(np.frombuffer(got[0][1], np.float32), W.sum(axis=1), rtol=1e-5, atol=1e-5)


@tritonpu.jit
def _product_stored(x_ptr, w_ptr, y_ptr, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, K)
    acc = tl.dot(tl.load(x_ptr + rm[:, None] * K + rk[None, :]), tl.load(w_ptr + rk[:, None] * N + rn[None, :]))
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty))


@pytest.mark.parametrize("out_dt", [np.float32, np.float16])
def test_a_product_only_stored_goes_from_l0c_to_gm_by_fix(out_dt):
    """K in one block, ``tl.store(c, tl.dot(a, b))``: FIX converts the product and stores it from
    L0C at 256 B/cycle, as it stores a K loop's accumulator (it went L0C -> UB -> GM, MTE3 at
    64 B/cycle: 1024x1024x64 at 128x128 took 4748 cycles, now 2286)."""
    M = N = 256
    K = 64
    rng = np.random.default_rng(2)
    x = rng.standard_normal((M, K)).astype(np.float16)
    w = rng.standard_normal((K, N)).astype(np.float16)
    y = np.zeros((M, N), out_dt)
    h = _product_stored[(2, 2)](x, w, y, N, K=K, BM=128, BN=128)
    _close(y, (x.astype(np.float32) @ w.astype(np.float32)).astype(out_dt), out_dt)
    isa = h.asm["isa"]
    t = "f16" if out_dt == np.float16 else "f32"
    assert f"mov.l0c.gm.{t}.f32 y_ptr[" in isa and "mov.ub.gm" not in isa and "mov.l0c.ub" not in isa, isa
    assert h.stats.bytes_by_path.get("l0c->gm") == M * N * np.dtype(out_dt).itemsize


@tritonpu.jit
def _two_dots_a_trip(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(0, K, 2 * BK):      # a K loop unrolled by hand
        acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :]),
                     tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :]), acc)
        acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + (k0 + BK + rk)[None, :]),
                     tl.load(b_ptr + (k0 + BK + rk)[:, None] * N + rn[None, :]), acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("K", [256, 384])
def test_two_dots_a_trip_accumulate_in_one_l0c_tile_through_the_odd_last_trip(K):
    """Two ``acc = tl.dot(.., acc)`` a trip: double buffering leaves the odd last trip after the
    loop, a chain of two dots -- they accumulate in the loop's L0C tile too (the first got an L0C
    tile of its own: 128x256 needed 262144 bytes of L0C and did not compile)."""
    M, N = 128, 256
    rng = np.random.default_rng(K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    got = []
    for opts in ({}, {"double_buffer": False}):
        c = np.zeros((M, N), np.float32)
        h = _two_dots_a_trip[(1, 1)](a, b, c, M, N, K, BM=128, BN=256, BK=64, **opts)
        got.append(c)
    np.testing.assert_allclose(got[0], a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert got[0].tobytes() == got[1].tobytes()
    assert "mov.l0c.gm.f32.f32" in h.asm["isa"]


@tritonpu.jit
def _gated_once(a_ptr, b_ptr, g_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GATED: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    acc2 = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, 2 * BK):       # two dots a trip per accumulator; K = 2 * BK: one trip
        a0 = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        a1 = tl.load(a_ptr + rm[:, None] * K + (k + BK + rk)[None, :])
        acc = tl.dot(a0, tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :]), acc)
        acc = tl.dot(a1, tl.load(b_ptr + (k + BK + rk)[:, None] * N + rn[None, :]), acc)
        if GATED:
            acc2 = tl.dot(a0, tl.load(g_ptr + (k + rk)[:, None] * N + rn[None, :]), acc2)
            acc2 = tl.dot(a1, tl.load(g_ptr + (k + BK + rk)[:, None] * N + rn[None, :]), acc2)
    if GATED:
        acc = acc * tl.sigmoid(acc) * acc2
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@pytest.mark.parametrize("gated", [False, True])
def test_a_chain_of_dots_outside_a_loop_accumulates_in_one_l0c_tile(gated):
    """A K loop of two dots a trip that runs once (the launch decides it) is two dots, the second
    accumulating into the first's product: it stays in L0C (stored by FIX, or drained once for a
    SwiGLU epilogue).  The first product was drained to UB and added on the vector unit: the gated
    form at 128x128x32 needed 200704 bytes of UB."""
    M, N, BK = 128, 128, 32
    K = 2 * BK
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((M, K)) * 0.3).astype(np.float16)
    b = (rng.standard_normal((K, N)) * 0.3).astype(np.float16)
    g = (rng.standard_normal((K, N)) * 0.3).astype(np.float16)
    got = []
    for opts in ({}, {"double_buffer": False}):
        c = np.zeros((M, N), np.float16)
        h = _gated_once[(1,)](a, b, g, c, M, N, K, BM=M, BN=N, BK=BK, GATED=gated, **opts)
        got.append(c)
    p = a.astype(np.float32) @ b.astype(np.float32)
    ref = p / (1 + np.exp(-p)) * (a.astype(np.float32) @ g.astype(np.float32)) if gated else p
    np.testing.assert_allclose(got[0].astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    assert got[0].tobytes() == got[1].tobytes()
    isa = h.asm["isa"]
    assert "vadd.f32 " not in isa and ("mov.l0c.ub" in isa if gated else "mov.l0c.gm.f16.f32" in isa), isa


@tritonpu.jit
def _scaled_a_times_column_blocks(a_ptr, b_ptr, c_ptr, s, K: tl.constexpr, N: tl.constexpr, B: tl.constexpr,
                                  BN: tl.constexpr):
    r = tl.arange(0, B)
    rk = tl.arange(0, K)
    rn = tl.arange(0, BN)
    a = (tl.load(a_ptr + r[:, None] * K + rk[None, :]) * s).to(tl.float16)    # on the vector unit: in UB
    for n0 in range(0, N, BN):
        b = tl.load(b_ptr + rk[:, None] * N + (n0 + rn)[None, :])
        tl.store(c_ptr + r[:, None] * N + (n0 + rn)[None, :], tl.dot(a, b))


def test_a_dot_operand_computed_before_a_loop_is_staged_into_l1_once():
    """``a`` scaled on the vector unit before the loop (FlashAttention's pre-scaled ``q``) is a dot
    operand in UB: it goes to L1 once, before the loop, not on every trip (8 trips here: 8 copies
    of its 16 KiB before; FlashAttention 4 x 1024 x 128 at 128x128 with q pre-scaled 81230 ->
    73760 cycles)."""
    B, K, N, BN = 64, 128, 512, 64
    rng = np.random.default_rng(12)
    a = rng.standard_normal((B, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((B, N), np.float32)
    h = _scaled_a_times_column_blocks[(1,)](a, b, c, 0.5, K=K, N=N, B=B, BN=BN)
    np.testing.assert_allclose(c, cube_product((a * np.float16(0.5)).astype(np.float16), b), rtol=1e-6, atol=1e-6)
    assert h.stats.bytes_by_path["ub->l1"] == B * K * 2, h.stats.bytes_by_path


@tritonpu.jit
def _two_dots_whole_row(q_ptr, k_ptr, v_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm, rn, rd = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    s = tl.dot(q, tl.trans(k))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], tl.dot(p.to(tl.float16), v))


def test_an_l0c_overflow_says_what_takes_l0c():
    # the scores (128 x 256 fp32: 128 KiB, all of L0C) beside the second dot's results: the message
    # gives both parts of the sum it reports
    q = np.zeros((128, 128), np.float16)
    kv = np.zeros((256, 128), np.float16)
    o = np.zeros((128, 128), np.float32)
    with pytest.raises(tritonpu.CompilationError) as e:
        _two_dots_whole_row[(1,)](q, kv, kv, o, BM=128, BN=256, D=128)
    assert "tl.dot needs 196608 bytes of L0C but it holds 131072 (its 128x256 fp32 product takes 131072, beside " \
           "the 65536 that the kernel's other dot results hold there)" in str(e.value), str(e.value)


@tritonpu.jit
def _dk_dv_like(k_ptr, v_ptr, q_ptr, do_ptr, dk_ptr, dv_ptr, S, BN: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    # attention backward's shape: two 128 x 128 fp32 accumulators (all of L0C) and two products a trip
    rn, rd = tl.arange(0, BN), tl.arange(0, D)
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    dk = tl.zeros((BN, D), tl.float32)
    dv = tl.zeros((BN, D), tl.float32)
    for start in range(0, S, BM):
        rm = start + tl.arange(0, BM)
        qT = tl.load(q_ptr + rm[None, :] * D + rd[:, None])
        do = tl.load(do_ptr + rm[:, None] * D + rd[None, :])
        pT = tl.exp(tl.dot(k, qT) * 0.01)
        dv += tl.dot(pT.to(tl.float16), do)
        dsT = pT * (tl.dot(v, tl.trans(do)) - 1.0)
        dk += tl.dot(dsT.to(tl.float16), tl.trans(qT))
    tl.store(dk_ptr + rn[:, None] * D + rd[None, :], dk)
    tl.store(dv_ptr + rn[:, None] * D + rd[None, :], dv)


def test_accumulators_that_do_not_fit_l0c_with_a_trips_product_keep_one_there():
    # dk and dv take L0C's 128 KiB; the trip's k @ qT and v @ do^T need more: an L0C overflow
    # was a CompilationError. Compiled again with one accumulator in L0C (the other
    # in UB, each trip's product added on the vector unit), with a note saying so.
    rng = np.random.default_rng(8)
    S, BN, D = 256, 128, 128
    k, v = (rng.standard_normal((BN, D)).astype(np.float16) for _ in range(2))
    q, do = (rng.standard_normal((S, D)).astype(np.float16) for _ in range(2))
    dk = np.zeros((BN, D), np.float32)
    dv = np.zeros((BN, D), np.float32)
    h = _dk_dv_like[(1,)](k, v, q, do, dk, dv, S, BN=BN, BM=32, D=D)
    pT = np.exp((k.astype(np.float64) @ q.T.astype(np.float64)) * 0.01)
    dsT = pT * (v.astype(np.float64) @ do.T.astype(np.float64) - 1.0)
    np.testing.assert_allclose(dv, pT.astype(np.float16).astype(np.float64) @ do, rtol=2e-2, atol=0.5)
    np.testing.assert_allclose(dk, dsT.astype(np.float16).astype(np.float64) @ q, rtol=2e-2, atol=0.5)
    assert any(n.startswith("one accumulator per loop kept in L0C, the others in UB: tl.dot needs") for n in
               h.stats.notes), h.stats.notes

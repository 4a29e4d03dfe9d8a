"""Programs of unequal work dealt to the cores (passes/program_balance.py)."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.passes.program_balance import _deal


@tritonpu.jit
def _tri_rowsum(X, S, Out, N, BLOCK: tl.constexpr):
    # Out[i] = S[pid] * sum(X[i, :i + 1]): row block pid reads pid + 1 column tiles
    pid = tl.program_id(0)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    s = tl.load(S + pid)
    for start in range(0, (pid + 1) * BLOCK, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X + rows[:, None] * N + cols[None, :])
        acc += tl.sum(tl.where(cols[None, :] <= rows[:, None], x, 0.0), 1)
    tl.store(Out + rows, acc * s)


@tritonpu.jit
def _causal_attention(Q, K, V, O, sm_scale, S, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * S * D
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start_n in range(0, (start_m + 1) * BLOCK_M, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k) * sm_scale
        qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


@tritonpu.jit
def _guarded_causal(X, Out, S, NUM_M, B: tl.constexpr):
    # an early return (rows past the end) puts the rest of the program, its loop too, in an `if`
    pid = tl.program_id(0)
    start_m = pid % NUM_M
    row = pid // NUM_M
    if start_m * B >= S:
        return
    acc = tl.zeros([B], dtype=tl.float32)
    for start in range(0, tl.minimum((start_m + 1) * B, S), B):
        acc += tl.load(X + row * S + start + tl.arange(0, B), mask=start + tl.arange(0, B) < S, other=0.0)
    tl.store(Out + row * S + start_m * B + tl.arange(0, B), acc, mask=start_m * B + tl.arange(0, B) < S)


def test_a_loop_under_an_early_return_is_dealt_too():
    rows, S, B = 4, 250, 16
    num_m = 24                             # 16 row blocks, 8 programs per row that return at once
    x = np.random.default_rng(2).standard_normal((rows, S)).astype(np.float32)
    outs = []
    for dis in ((), ("balance",)):
        out = np.zeros_like(x)
        h = _guarded_causal[(num_m * rows,)](x, out, S, num_m, B=B, sanitize=False, disable_passes=dis)
        outs.append((out, h))
    (out, h), (off, h_off) = outs
    padded = np.pad(x, ((0, 0), (0, num_m * B - S))).reshape(rows, num_m, B)   # lane l of column tile t
    want = np.cumsum(padded, axis=1).reshape(rows, num_m * B)[:, :S]             # program m: tiles 0..m
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    assert out.tobytes() == off.tobytes()
    assert "__order" in h.asm["isa"] and h.stats.cycles < 0.85 * h_off.stats.cycles


def _tri(n, block, **opts):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    s = rng.standard_normal(n // block).astype(np.float32)
    out = np.zeros(n, np.float32)
    h = _tri_rowsum[(n // block,)](x, s, out, n, BLOCK=block, **opts)
    np.testing.assert_allclose(out, np.tril(x).sum(1) * np.repeat(s, block), rtol=1e-5, atol=1e-4)
    return out, h


def test_deal_keeps_each_cores_trip_count_and_runs_every_program_once():
    work = np.arange(1, 33, dtype=float)            # program p does p + 1 units
    busiest, table = _deal(work, 24)
    assert sorted(table.tolist()) == list(range(32))
    # trip c + 24k runs core c's k-th program: cores 0..7 keep two trips, the others one
    per_core = [table[c::24].tolist() for c in range(24)]
    assert [len(p) for p in per_core] == [2] * 8 + [1] * 16
    assert all(p == sorted(p) for p in per_core)
    robin = max(work[c::24].sum() for c in range(24))
    assert (busiest, robin) == (max(work[p].sum() for p in per_core), 40.0)
    assert busiest <= 33.0


def test_a_triangular_loop_is_dealt_and_gives_the_same_bits_in_fewer_cycles():
    out, h = _tri(512, 16)
    assert "__order" in h.asm["isa"] and "balanced = true" in h.asm["balance"]
    assert any(n.startswith("balance: the programs' work differs") for n in h.stats.notes)
    off, h_off = _tri(512, 16, disable_passes=("balance",))
    assert "__order" not in h_off.asm["isa"]
    assert out.tobytes() == off.tobytes()
    assert h.stats.cycles < 0.85 * h_off.stats.cycles
    spread = max(h.stats.core_cycles) / min(h.stats.core_cycles)
    assert spread < max(h_off.stats.core_cycles) / min(h_off.stats.core_cycles)
    # the compiler's table is not GM the kernel reads: the roofline does not count it
    assert h.stats.read_bytes == h_off.stats.read_bytes


def test_a_launch_whose_values_give_another_table_compiles_again():
    _, h1 = _tri(512, 16, sanitize=False)
    _, h2 = _tri(768, 16, sanitize=False)           # 48 programs: another table
    _, h3 = _tri(512, 16, sanitize=False)
    _, h2_off = _tri(768, 16, sanitize=False, disable_passes=("balance",))
    assert "__order" in h2.asm["isa"] and h3.stats.cycles == h1.stats.cycles
    assert h2.stats.cycles < 0.85 * h2_off.stats.cycles


def test_as_many_programs_as_cores_stay_in_round_robin():
    _, h = _tri(256, 16, cores=16)                  # 16 programs on 16 cores: one each
    assert "__order" not in h.asm["isa"]


def test_programs_of_equal_work_stay_in_round_robin():
    x = np.arange(4096, dtype=np.float32)
    out = np.zeros_like(x)

    @tritonpu.jit
    def double(X, Out, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(Out + offs, tl.load(X + offs) * 2)

    h = double[(64,)](x, out, BLOCK=64)
    assert "__order" not in h.asm["isa"] and np.array_equal(out, 2 * x)


@pytest.mark.parametrize("sanitize", [True, False])
def test_causal_attention_is_dealt_with_the_same_bits(sanitize):
    H, S, D, B = 2, 1024, 64, 64
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((H, S, D)).astype(np.float16) for _ in range(3))
    outs = []
    for dis in ((), ("balance",)):
        o = np.zeros_like(q)
        h = _causal_attention[(S // B, H)](q, k, v, o, D ** -0.5, S, D=D, BLOCK_M=B, BLOCK_N=B,
                                            sanitize=sanitize, disable_passes=dis)
        outs.append((o, h))
    (o, h), (o_off, h_off) = outs
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64)) * D ** -0.5
    s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(o.astype(np.float64), ref, atol=2e-2, rtol=2e-2)
    assert o.tobytes() == o_off.tobytes()
    assert "__order" in h.asm["isa"] and "__order" not in h_off.asm["isa"]
    assert h.stats.cycles < 0.85 * h_off.stats.cycles


def test_programs_that_see_one_another_stay_in_round_robin():
    # an atomic counter: the order programs run in is observable
    x = np.ones(512 * 512, np.float32)
    cnt = np.zeros(1, np.int32)

    @tritonpu.jit
    def tri_count(X, C, N, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, (pid + 1) * BLOCK, BLOCK):
            acc += tl.load(X + pid * BLOCK * N + start + tl.arange(0, BLOCK))
        tl.atomic_add(C, tl.sum(acc, 0).to(tl.int32))

    h = tri_count[(32,)](x, cnt, 512, BLOCK=16)
    assert cnt[0] == sum(16 * (p + 1) for p in range(32)) and "__order" not in h.asm["isa"]

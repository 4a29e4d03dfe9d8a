"""A dot's product only scaled and added to a tile (``qk * scale + tl.where(mask, 0, -1e6)``,
``alpha * (A @ B) + C``) waits in L0C; FIX drains it scaled onto that tile a few rows at a time
(codegen/cube_homes.py ``_scaled_then_added``): no M x N tile of the product in UB."""
import re

import numpy as np

import tritonpu
import tritonpu.language as tl
from tpu_util import cube_product


@tritonpu.jit
def _alpha_ab_plus_c(a_ptr, b_ptr, c_ptr, out_ptr, N, K, alpha, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b) * alpha + c)


def test_alpha_times_a_product_plus_c_is_drained_onto_c_with_the_same_bits():
    rng = np.random.default_rng(5)
    M, N, K = 256, 256, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    alpha = 0.37
    h = _alpha_ab_plus_c[(2, 2)](a, b, c, out, N, K, alpha, BM=128, BN=128, BK=64)
    want = (cube_product(a, b) * np.float32(alpha)).astype(np.float32) + c
    np.testing.assert_array_equal(out, want)
    isa = h.asm["isa"]
    drains = re.findall(r"mov\.l0c\.ub\.f32\.f32 [^\n]*, (\d+), 512, 512, 512, scale=", isa)
    assert drains and all(int(r) < 128 for r in drains), drains     # a few rows at a time, scaled
    assert int(re.search(r"ub_peak = (\d+)", h.asm["buffer-planning"]).group(1)) <= 2 * 65536


@tritonpu.jit
def _causal_attention(q_ptr, k_ptr, v_ptr, o_ptr, S, scale, D: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr):
    head = tl.program_id(1)
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    dims = tl.arange(0, D)
    base = head * S * D
    q = tl.load(q_ptr + base + rows[:, None] * D + dims[None, :])
    m = tl.full((BM,), -1e30, tl.float32)
    l = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, (tl.program_id(0) + 1) * BM, BN):
        keys = start + cols
        k = tl.load(k_ptr + base + keys[None, :] * D + dims[:, None])
        s = tl.dot(q, k) * scale + tl.where(rows[:, None] >= keys[None, :], 0, -1.0e6)
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + keys[:, None] * D + dims[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m = m_new
    tl.store(o_ptr + base + rows[:, None] * D + dims[None, :], (acc / l[:, None]).to(tl.float16))


def test_a_causal_attention_with_the_mask_added_after_scaling_fits_at_128x128_head_dim_128():
    """The masked scores held the 64 KiB accumulator, the scaled product and the mask's 64 KiB
    ``where`` tile at once: 3 KiB over UB at 128x128 (head dim 128).  Now the scaled product is
    drained onto the ``where`` tile."""
    rng = np.random.default_rng(6)
    H, S, D = 2, 256, 128
    q, k, v = (rng.normal(0, 0.5, (H, S, D)).astype(np.float16) for _ in range(3))
    o = np.zeros((H, S, D), np.float16)
    _causal_attention[(S // 128, H)](q, k, v, o, S, 0.125, D=D, BM=128, BN=128)
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) * 0.125
    s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(o.astype(np.float64), want, atol=2e-3, rtol=0)



@tritonpu.jit
def _scaled_across_a_k_loop(a_ptr, b_ptr, c_ptr, d_ptr, acc_ptr, out_ptr, K, alpha, B: tl.constexpr,
                            BK: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, B)
    rk = tl.arange(0, BK)
    rn = tl.arange(0, N)
    x = tl.dot(tl.load(a_ptr + r[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * B + r[None, :])) * alpha
    acc = tl.zeros((B, B), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptr + r[:, None] * K + (k + rk)[None, :]),
                     tl.load(b_ptr + (k + rk)[:, None] * B + r[None, :]), acc)
    y = x + tl.load(c_ptr + r[:, None] * B + r[None, :])
    w = tl.dot(y.to(tl.float16), tl.load(d_ptr + r[:, None] * N + rn[None, :]))
    tl.store(acc_ptr + r[:, None] * B + r[None, :], acc)
    tl.store(out_ptr + r[:, None] * N + rn[None, :], tl.exp(w * 0.01))


def test_a_scaled_product_that_would_leave_too_little_l0c_is_drained_at_once():
    """The product waiting in L0C beside a K loop's 64 KiB accumulator (stored from L0C after the
    add) leaves no room for the last dot's product, drained to UB: the kernel is compiled again
    with the scaled product drained at once."""
    rng = np.random.default_rng(9)
    B, K, N = 128, 128, 16
    a = rng.standard_normal((B, K)).astype(np.float16)
    b = rng.standard_normal((K, B)).astype(np.float16)
    c = rng.standard_normal((B, B)).astype(np.float32)
    d = rng.standard_normal((B, N)).astype(np.float16)
    acc, out = np.zeros((B, B), np.float32), np.zeros((B, N), np.float32)
    h = _scaled_across_a_k_loop[(1,)](a, b, c, d, acc, out, K, 0.5, B=B, BK=32, N=N)
    np.testing.assert_array_equal(acc, cube_product(a, b))
    y = (cube_product(a[:, :32], b[:32]) * np.float32(0.5)).astype(np.float32) + c
    np.testing.assert_allclose(out, np.exp(cube_product(y.astype(np.float16), d).astype(np.float64) * 0.01), rtol=1e-6)
    assert not re.search(r"mov\.l0c\.ub\.f32\.f32 [^\n]*, 8, 512, 512, 512, scale=alpha", h.asm["isa"])


@tritonpu.jit
def _scaled_beside_another_dot(a_ptr, b_ptr, c_ptr, out_ptr, out2_ptr, s, B: tl.constexpr, BK: tl.constexpr):
    r = tl.arange(0, B)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + r[:, None] * BK + rk[None, :])
    b1 = tl.load(b_ptr + rk[:, None] * B + r[None, :])
    b2 = tl.load(b_ptr + (BK + rk)[:, None] * B + r[None, :])
    c = tl.load(c_ptr + r[:, None] * B + r[None, :])
    t = tl.dot(a, b1) * s
    u = tl.dot(a, b2)
    tl.store(out2_ptr + r[:, None] * B + r[None, :], u + tl.exp(u * 0.01))
    tl.store(out_ptr + r[:, None] * B + r[None, :], t + c)


def test_a_scaled_product_whose_drain_buffers_overflow_a_full_ub_is_drained_at_once():
    """A plan that fills UB exactly (found by a probe: it compiled before scaled products waited in
    L0C, then needed the two 4 KiB drain buffers on top): compiled again with the product drained
    at once -- the same bits as the model computes."""
    rng = np.random.default_rng(10)
    B, BK = 128, 64
    a = rng.standard_normal((B, BK)).astype(np.float16)
    b = rng.standard_normal((2 * BK, B)).astype(np.float16)
    c = rng.standard_normal((B, B)).astype(np.float32)
    out, out2 = np.zeros((B, B), np.float32), np.zeros((B, B), np.float32)
    h = _scaled_beside_another_dot[(1,)](a, b, c, out, out2, 0.37, B=B, BK=BK)
    np.testing.assert_array_equal(out, (cube_product(a, b[:BK]) * np.float32(0.37)).astype(np.float32) + c)
    u = cube_product(a, b[BK:])
    np.testing.assert_allclose(out2, u + np.exp(u.astype(np.float64) * 0.01), rtol=1e-6, atol=1e-6)
    assert "scale=s" in h.asm["isa"]


@tritonpu.jit
def _attention_forms(q_ptr, k_ptr, v_ptr, o_ptr, S, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     EARLY: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + dims[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start in range(0, S, BN):
        k = tl.load(k_ptr + (start + cols)[:, None] * D + dims[None, :])
        qk = tl.dot(q, tl.trans(k)) * scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        v = tl.load(v_ptr + (start + cols)[:, None] * D + dims[None, :])
        if EARLY:       # triton-ascend's samples: the product first, then the softmax's vector work
            pv = tl.dot(p.to(k.dtype), v)
            alpha = tl.exp(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            acc = acc + pv
        else:           # Triton's tutorial order: the product where it is added
            alpha = tl.exp(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(k.dtype), v)
        m_i = m_ij
    tl.store(o_ptr + rows[:, None] * D + dims[None, :], acc / l_i[:, None])


def test_a_product_made_before_the_softmax_waits_in_l0c_until_it_is_added():
    # at 128 x 128 blocks and head dim 128 the product made first (pv) took 64 KiB of UB beside the
    # scores, p and the accumulator while the vector unit worked: 230912 bytes of UB, a
    # CompilationError. Waiting in L0C it compiles, and computes the bits of the tutorial's order.
    rng = np.random.default_rng(6)
    S, D = 256, 128
    q, k, v = (rng.standard_normal((S, D)).astype(np.float16) for _ in range(3))
    outs = []
    for early in (True, False):
        o = np.zeros((S, D), np.float32)
        _attention_forms[(S // 128,)](q, k, v, o, S, 1 / np.sqrt(D), D=D, BM=128, BN=128, EARLY=early)
        outs.append(o)
    np.testing.assert_array_equal(outs[0], outs[1])
    s = q.astype(np.float64) @ k.T.astype(np.float64) / np.sqrt(D)
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(outs[0], (p / p.sum(1, keepdims=True)) @ v.astype(np.float64), atol=2e-2, rtol=2e-2)

"""The stagger pass (software pipelining of dot -> vector -> dot loops): its IR on a small
attention-like loop, when it does not apply, and FlashAttention end to end -- bitwise the same
results with it on and off, fewer cycles with it on, the sanitizer clean."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.ir import parse_function, print_function, verify
from tritonpu.passes import PassManager
from tritonpu.testing import filecheck

ROOT = Path(__file__).resolve().parents[2]


def _run(text: str) -> str:
    fn = parse_function(text)
    verify(fn)
    PassManager(["stagger"]).run(fn)
    verify(fn)
    return print_function(fn)


# acc = acc * alpha + dot(exp(q @ k) , v) with a running max: stage 1 is the acc recurrence and its
# dot (and the load of v it alone reads); stage 0 the scores, the softmax and the carried m
LOOP = """#f0 = "k.py"
func @k(%q: ptr<f16>, %kp: ptr<f16>, %vp: ptr<f16>, %o: ptr<f32>, %n: i32) {
  %z = constant {value = 0} : i32 loc(#f0:1:0)
  %B = constant {value = 16} : i32 loc(#f0:1:0)
  %one = constant {value = 1} : i32 loc(#f0:1:0)
  %c0 = constant {value = 0.0} : f32 loc(#f0:1:0)
  %ninf = constant {value = -1.0e30} : f32 loc(#f0:1:0)
  %qt = load_tile %q, %B, %one, %B, %B : tensor<16x16xf16> loc(#f0:2:0)
  %acc0 = splat %c0 : tensor<16x16xf32> loc(#f0:3:0)
  %m0 = splat %ninf : tensor<16xf32> loc(#f0:4:0)
  %accr, %mr = for %z, %n, %B, %acc0, %m0 {
  ^bb(%i: i32, %acc: tensor<16x16xf32>, %m: tensor<16xf32>):
    %off = mul %i, %B : i32 loc(#f0:5:0)
    %kq = addptr %kp, %off : ptr<f16> loc(#f0:5:0)
    %kt = load_tile %kq, %B, %one, %B, %B : tensor<16x16xf16> loc(#f0:5:0)
    %s = dot %qt, %kt : tensor<16x16xf32> loc(#f0:6:0)
    %mx = reduce %s {axis = 1, op = "max"} : tensor<16xf32> loc(#f0:7:0)
    %mn = maximum %m, %mx : tensor<16xf32> loc(#f0:7:0)
    %d = sub %m, %mn : tensor<16xf32> loc(#f0:8:0)
    %alpha = exp %d : tensor<16xf32> loc(#f0:8:0)
    %p = exp %s : tensor<16x16xf32> loc(#f0:9:0)
    %ph = cast %p : tensor<16x16xf16> loc(#f0:9:0)
    %vq = addptr %vp, %off : ptr<f16> loc(#f0:10:0)
    %vt = load_tile %vq, %B, %one, %B, %B : tensor<16x16xf16> loc(#f0:10:0)
    %ae = expand_dims %alpha {axis = 1} : tensor<16x1xf32> loc(#f0:11:0)
    %ab = broadcast %ae : tensor<16x16xf32> loc(#f0:11:0)
    %sc = mul %acc, %ab : tensor<16x16xf32> loc(#f0:11:0)
    %acc2 = dot %ph, %vt, %sc : tensor<16x16xf32> loc(#f0:11:0)
    yield %acc2, %mn loc(#f0:12:0)
  } : tensor<16x16xf32>, tensor<16xf32> loc(#f0:5:0)
  store_tile %o, %B, %one, %B, %B, %accr loc(#f0:13:0)
  return loc(#f0:14:0)
}
"""


def test_stagger_runs_stage_0_of_the_next_trip_before_stage_1_of_this_one():
    out = _run(LOOP)
    filecheck(out, """
CHECK: %0 = cmp %z, %n {pred = "lt"} : i1
CHECK: = if %0 {
CHECK: = splat %c0 : tensor<16x16xf32>
CHECK: = dot %qt, %
CHECK: = cast %
CHECK: {stagger = "on"} {
CHECK: = add %i, %B : i32
CHECK: = dot %qt, %
CHECK: = exp %
CHECK: = cast %
CHECK: = load_tile %
CHECK: = mul %acc, %
CHECK: = dot %
CHECK: yield %
CHECK: } : tensor<16xf32>, tensor<16x16xf32>, i32, tensor<16xf32>, tensor<16x16xf16>
CHECK: = dot %
CHECK: } {
CHECK: = splat %c0 : tensor<16x16xf32>
CHECK: yield %
""")
    # stage 1 carries what stage 0 made for it: the trip's offset, alpha and the fp16 probabilities
    assert "^bb(%i: i32, %m: tensor<16xf32>, %acc: tensor<16x16xf32>, %off_1: i32, %alpha_1: tensor<16xf32>, " \
           "%ph_1: tensor<16x16xf16>)" in out, out


def test_stagger_leaves_a_loop_whose_first_stage_needs_the_recurrence():
    # the running max now depends on acc: stage 0 would read stage 1
    text = LOOP.replace("%mx = reduce %s {axis = 1, op = \"max\"} : tensor<16xf32>",
                        "%mx = reduce %acc {axis = 1, op = \"max\"} : tensor<16xf32>")
    out = _run(text)
    assert "stagger" not in out and out.count("= dot ") == 2, out


def test_stagger_leaves_a_plain_k_loop():
    # one dot per trip (a matmul's K loop): nothing for the cube to run ahead of
    text = LOOP.replace("%s = dot %qt, %kt : tensor<16x16xf32>", "%s = cast %kt : tensor<16x16xf32>")
    out = _run(text)
    assert "stagger" not in out, out


def _fa():
    spec = importlib.util.spec_from_file_location("fa_stagger", ROOT / "kernels" / "flash_attention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("seq", [1, 64, 65, 200, 320])
def test_flash_attention_staggered_is_bitwise_the_same(dtype, seq):
    fa = _fa()
    rng = np.random.default_rng(seq)
    q, k, v = ((rng.standard_normal((2, seq, 64)) * 0.5).astype(dtype) for _ in range(3))
    on, h_on = fa.attention(q, k, v, BLOCK_M=64, BLOCK_N=64)          # the sanitizer is on
    ir_on = h_on.asm["stagger"]
    off, h_off = fa.attention(q, k, v, BLOCK_M=64, BLOCK_N=64, disable_passes=("stagger",))
    assert on.tobytes() == off.tobytes()
    np.testing.assert_allclose(on.astype(np.float64), fa.reference(q, k, v), rtol=2e-2, atol=2e-2)
    if seq > 64:            # a loop of more than one trip (one trip: versioning leaves no loop)
        assert 'stagger = "on"' in ir_on
        assert h_on.stats.cycles < h_off.stats.cycles, (h_on.stats.cycles, h_off.stats.cycles)


def test_flash_attention_at_block_n_128_compiles():
    # 128 x 128 fp16 blocks at head dim 128: the dot's result is added in place over its
    # accumulator (FIX drains the product in chunks), so the kernel fits the Unified Buffer
    fa = _fa()
    rng = np.random.default_rng(0)
    q, k, v = ((rng.standard_normal((1, 300, 128)) * 0.5).astype(np.float16) for _ in range(3))
    out, h = fa.attention(q, k, v, BLOCK_M=128, BLOCK_N=128)
    np.testing.assert_allclose(out.astype(np.float64), fa.reference(q, k, v), rtol=2e-2, atol=2e-2)
    assert h.stats.pipe_busy["cube"] > 0


@tritonpu.jit
def _dot_epilogue(a_ptr, b_ptr, c_ptr, x_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    acc = tl.dot(a, b, x * 2.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("M,N", [(128, 128), (64, 16), (16, 256)])
def test_dot_with_a_vector_accumulator_adds_the_drained_product_in_chunks(M, N):
    rng = np.random.default_rng(M + N)
    K = 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    x = rng.standard_normal((M, N)).astype(np.float32)
    outs, isa = {}, ""
    for be in ("npu", "ref"):
        c = np.zeros((M, N), np.float32)
        h = _dot_epilogue[(1,)](a, b, c, x, M=M, N=N, K=K, backend=be)
        outs[be] = c
        isa = h.asm["isa"] if be == "npu" else isa
    # (the cube sums the products in another order than numpy: fp32 rounding apart)
    np.testing.assert_allclose(outs["npu"], outs["ref"], rtol=1e-5, atol=1e-4)
    # FIX drains at most 4 KiB at a time; each chunk is added on the vector unit
    chunk_rows = max(1, 4096 // (N * 4))
    assert isa.count("mov.l0c.ub") == -(-M // chunk_rows), isa


@tritonpu.jit
def _scaled_dot(a_ptr, b_ptr, c_ptr, scale, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                APART: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    s = tl.dot(a, b)
    if APART:       # something between the dot and the multiply: the vector unit multiplies
        tl.store(c_ptr + M * N + rm, rm.to(tl.float32))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], s * scale)


def test_fix_multiplies_a_dot_by_a_scalar_on_the_way_out_bitwise_as_the_vector_unit():
    rng = np.random.default_rng(5)
    M, N, K = 64, 64, 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    outs, isas = {}, {}
    for apart in (False, True):
        c = np.zeros(M * N + M, np.float32)
        h = _scaled_dot[(1,)](a, b, c, 0.0883883, M=M, N=N, K=K, APART=apart)
        outs[apart], isas[apart] = c[:M * N], h.asm["isa"]
    assert "scale=" in isas[False] and "vmuls" not in isas[False], isas[False]
    assert "scale=" not in isas[True] and "vmuls.f32" in isas[True]
    assert outs[False].tobytes() == outs[True].tobytes()


@pytest.mark.parametrize("block_n", [64, 128])
def test_flash_attention_head_dim_128_keeps_its_accumulator_in_place(block_n):
    # BLOCK_M 128, head dim 128: the 64 KiB fp32 accumulator (acc * alpha + p @ v) is updated in
    # place in the loop's carried buffer -- no copy at the yield -- so the staggered loop fits the
    # Unified Buffer next to 32 or 64 KiB of scores (at 128 only by placing the largest tiles
    # first); consecutive dots use alternate halves of L0C (the scores of the next trip are
    # computed while FIX still drains p @ v)
    fa = _fa()
    rng = np.random.default_rng(block_n)
    q, k, v = ((rng.standard_normal((1, 300, 128)) * 0.5).astype(np.float16) for _ in range(3))
    out, h = fa.attention(q, k, v, BLOCK_M=128, BLOCK_N=block_n)
    np.testing.assert_allclose(out.astype(np.float64), fa.reference(q, k, v), rtol=2e-2, atol=2e-2)
    assert 'stagger = "on"' in h.asm["buffer-planning"]
    isa = h.asm["isa"]
    assert not re.search(r"vmov\.f32 \S+, \S+, 16384\b", isa), "the accumulator is copied"
    assert sorted(set(re.findall(r"mmad\S* l0c\[(\d+)\]", isa))) == ["0", "65536"]
    off, _ = fa.attention(q, k, v, BLOCK_M=128, BLOCK_N=block_n, disable_passes=("stagger",))
    assert out.tobytes() == off.tobytes()


def test_first_fit_places_the_largest_tiles_first_when_definition_order_fragments():
    # in order of definition a short-lived and a long-lived 32-byte tile sit side by side and the
    # 64-byte one made after the short one dies finds no 64 contiguous bytes below 96
    from tritonpu.codegen.homes import Group
    from tritonpu.errors import CompilationError
    from tritonpu.passes.buffer_planning import _first_fit
    from tritonpu.ir import Value
    from tritonpu.ir.types import parse_type

    def group(name, start, end, n):
        return Group(values=[Value(parse_type(f"tensor<{n // 4}xf32>"), name)], start=start, end=end, bytes=n)

    short, long_, big = group("short", 0, 1, 32), group("long", 0, 10, 32), group("big", 2, 10, 64)
    addr: dict = {}
    assert _first_fit([short, long_, big], 32, 96, "ub", addr) == 96
    spans = {id(g): (addr[id(g)], addr[id(g)] + g.bytes) for g in (short, long_, big)}
    for a, b in ((long_, big), (short, long_)):            # the pairs that are live together
        (a0, a1), (b0, b1) = spans[id(a)], spans[id(b)]
        assert a1 <= b0 or b1 <= a0, spans
    with pytest.raises(CompilationError, match="needs 128 bytes of Unified Buffer at once but UB holds 64: `big`"):
        _first_fit([short, long_, big], 32, 64, "ub", {})


@tritonpu.jit
def _attention_q_prescaled(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, D: tl.constexpr):
    # the tutorial / triton-ascend habit: the softmax scale (with log2 e) applied to q once, before the loop
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    q = (q * (scale * 1.44269504)).to(tl.float16)
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.where(offs_n[None, :] < seq_len, tl.dot(q, tl.trans(k)), -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=offs_m[:, None] < seq_len)


def test_a_prescaled_q_is_copied_to_l1_once_and_frees_its_unified_buffer():
    """``q`` computed on the vector unit before the key loop is a dot operand in UB: it is copied
    into an L1 tile of its own once, where it is made, and its 32 KiB of UB are free from there on
    -- so FlashAttention at 128 x 128 blocks, head dim 128, fits the Unified Buffer staggered
    (before: ``stagger = "off: the kernel needs 199168 bytes of Unified Buffer ..."``, and q went
    UB -> L1 on every key block; 4 x 1024 x 128: 81230 -> 54066 cycles, the unscaled form 50892)."""
    S, D, B = 300, 128, 128
    rng = np.random.default_rng(3)
    q, k, v = ((rng.standard_normal((S, D)) * 0.5).astype(np.float16) for _ in range(3))
    outs, hs = {}, {}
    for name, off in (("on", ()), ("off", ("stagger",))):
        outs[name] = np.zeros_like(q)
        hs[name] = _attention_q_prescaled[(3,)](q, k, v, outs[name], S, D ** -0.5, BLOCK_M=B, BLOCK_N=B, D=D,
                                                disable_passes=off)
    ir = hs["on"].asm["buffer-planning"]
    assert 'stagger = "on"' in ir, ir
    assert re.search(r"%q_1 = cast .*\{.*l1_stage = \d+", ir), ir
    assert outs["on"].tobytes() == outs["off"].tobytes()
    np.testing.assert_allclose(outs["on"].astype(np.float64), _fa().reference(q[None], k[None], v[None])[0],
                               rtol=2e-2, atol=2e-2)
    # one copy of q (3 programs x 32 KiB) besides p's on each of the 3 key blocks (32 KiB each)
    assert hs["on"].stats.bytes_by_path["ub->l1"] == 3 * B * D * 2 + 3 * 3 * B * B * 2, hs["on"].stats.bytes_by_path

"""Counter-based random numbers as Triton has them: ``tl.randint``, ``randint4x``, ``rand``,
``rand4x``, ``randn``, ``randn4x`` and ``philox`` — the same streams as Triton for a (seed, offset).

Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11):
the counter is (offset, 0, 0, 0), the key the low and high 32 bits of the seed; each round
multiplies two counter words by the round constants, mixes the high halves with the other words
and the key, and bumps the key by the Weyl constants.  Uniform floats come from the 32-bit outputs
read as signed ints folded to [0, 2^31) and scaled by the float32 just below 2^-31 (so 1.0 never
comes out); normals by Box-Muller.
"""
import tritonpu.language as tl
from tritonpu.runtime.jit import jit

ROUND_MUL_0: tl.constexpr = 0xD2511F53      # multiplies counter word 0
ROUND_MUL_1: tl.constexpr = 0xCD9E8D57      # multiplies counter word 2
KEY_BUMP_0: tl.constexpr = 0x9E3779B9       # added to key word 0 after each round (golden ratio)
KEY_BUMP_1: tl.constexpr = 0xBB67AE85       # added to key word 1 (sqrt(3) - 1)
ROUNDS: tl.constexpr = 10


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = ROUNDS):
    """Philox-4x32 of the counter (c0, c1, c2, c3) (uint32 blocks) under the 64-bit ``seed``."""
    seed = tl.to_tensor(seed).to(tl.uint64)
    k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
    k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    for _ in tl.static_range(n_rounds):
        w0 = c0
        w2 = c2
        c0 = tl.umulhi(w2, ROUND_MUL_1) ^ c1 ^ k0
        c2 = tl.umulhi(w0, ROUND_MUL_0) ^ c3 ^ k1
        c1 = w2 * ROUND_MUL_1
        c3 = w0 * ROUND_MUL_0
        k0 = k0 + KEY_BUMP_0
        k1 = k1 + KEY_BUMP_1
    return c0, c1, c2, c3


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """Four blocks of random uint32 for the ``offset`` block."""
    offset = tl.to_tensor(offset).to(tl.uint32, bitcast=True)
    zero = offset * 0
    return philox(seed, offset, zero, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """One block of random uint32 for the ``offset`` block."""
    r, _, _, _ = randint4x(seed, offset, n_rounds)
    return r


@jit
def uint_to_uniform_float(x):
    """A random 32-bit pattern to a float32 in [0, 1): folded to [0, 2^31) and scaled by the largest
    float32 that keeps (2^31 - 1) * scale below 1 (2^-31 itself rounds the largest to 1.0)."""
    s = x.to(tl.int32, bitcast=True)
    s = tl.where(s < 0, -s - 1, s)
    return s * 4.6566127342e-10


@jit
def rand(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """A block of float32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """Four blocks of float32 uniform in [0, 1)."""
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return uint_to_uniform_float(r0), uint_to_uniform_float(r1), uint_to_uniform_float(r2), uint_to_uniform_float(r3)


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms to two independent standard normals."""
    u1 = tl.maximum(1.0e-7, u1)
    angle = 6.283185307179586 * u2
    radius = tl.sqrt(-2.0 * tl.log(u1))
    return radius * tl.cos(angle), radius * tl.sin(angle)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """A block of float32 standard normals."""
    r0, r1, _, _ = randint4x(seed, offset, n_rounds)
    n0, _ = pair_uniform_to_normal(uint_to_uniform_float(r0), uint_to_uniform_float(r1))
    return n0


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = ROUNDS):
    """Four blocks of float32 standard normals."""
    u0, u1, u2, u3 = rand4x(seed, offset, n_rounds)
    n0, n1 = pair_uniform_to_normal(u0, u1)
    n2, n3 = pair_uniform_to_normal(u2, u3)
    return n0, n1, n2, n3

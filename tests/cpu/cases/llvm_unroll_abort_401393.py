import numpy as np
import tritonpu
import tritonpu.language as tl

@tritonpu.jit
def kern(x0_ptr, o0_ptr, o1_ptr, o2_ptr, o3_ptr, n, m, stride, s, f, t, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    offs = rows[:, None] * stride + cols[None, :]
    mask = (rows[:, None] < n) & (cols[None, :] < m)
    sc = pid * 9 + s
    x0 = tl.load(x0_ptr + offs, mask=mask, other=2.0)
    rnd = tl.rand(s, offs)
    v0 = (tl.maximum(-100, tl.where((rnd != rnd) | (rnd == 0), 0.0, rnd).to(tl.int32, bitcast=True)) | ((2 - rows[:, None]) // tl.where((cols[None, :] == 0) | (cols[None, :] == -1), 7, cols[None, :])))
    v1 = tl.max(rnd, axis=1)
    v2 = tl.cumsum(rnd, axis=0, reverse=True)
    v3 = ((rows[:, None] // tl.where((cols[None, :] == 0) | (cols[None, :] == -1), 7, cols[None, :])) % tl.where(((~cols[None, :]) == 0) | ((~cols[None, :]) == -1), 7, (~cols[None, :]))).to(tl.float32, bitcast=True)
    v4 = (rows[:, None] >> (tl.where(((2.0 - s) != (2.0 - s)) | ((2.0 - s) == 0), 0.0, (2.0 - s)).to(tl.int32, bitcast=True) & 31))
    v5 = ((s % tl.where(((sc & tl.full([], 0, tl.int32)) == 0) | ((sc & tl.full([], 0, tl.int32)) == -1), 7, (sc & tl.full([], 0, tl.int32)))) // tl.where(((((x0 / 0.25) == rows[:, None].to(tl.float16))).to(tl.int8) == 0) | ((((x0 / 0.25) == rows[:, None].to(tl.float16))).to(tl.int8) == -1), 7, (((x0 / 0.25) == rows[:, None].to(tl.float16))).to(tl.int8)))
    v6 = ((cols[None, :] >> ((tl.maximum(v5, 3.0)).to(tl.int32) & 31)) & (((v0 >> (pid & 31)) / s)).to(tl.int16))
    v7 = tl.sum(v6, axis=0)
    if sc < 4:
        w = tl.broadcast_to((tl.minimum((127 - v4), tl.abs(v7[None, :])) << ((tl.fma(tl.fma(v1[:, None], v3, rnd), (v1[:, None] + pid), v1[:, None])).to(tl.int8) & 31)), [BM, BN])
    else:
        w = tl.broadcast_to(v7[None, :], [BM, BN])
    tl.store(o0_ptr + offs, v6, mask=mask)
    tl.store(o1_ptr + offs, tl.where((tl.fma((tl.minimum(rows[:, None], 13)).to(tl.float32), v3, tl.full([], 0.5, tl.float32)) != tl.fma((tl.minimum(rows[:, None], 13)).to(tl.float32), v3, tl.full([], 0.5, tl.float32))) | (tl.fma((tl.minimum(rows[:, None], 13)).to(tl.float32), v3, tl.full([], 0.5, tl.float32)) == 0), 0.0, tl.fma((tl.minimum(rows[:, None], 13)).to(tl.float32), v3, tl.full([], 0.5, tl.float32))).to(tl.int32, bitcast=True), mask=mask)
    tl.store(o2_ptr + rows, v1, mask=rows < n)
    tl.store(o3_ptr + pid * BN + cols, v7, mask=cols < m)


META = {'seed': 401393, 'two_d': True, 'G': 2, 'BM': 32, 'BN': 16, 'n': 64, 'm': 16, 'stride': 16, 'rows_alloc': 64, 'in_dts': ['fp16'], 'outs': [{'kind': 'F', 'dt': 'int32', 'approx': 0}, {'kind': 'F', 'dt': 'int32', 'approx': 0}, {'kind': 'R', 'dt': 'fp32', 'approx': 0}, {'kind': 'C', 'dt': 'int32', 'approx': 0}], 's': 9, 'f': 0.01, 't': 0, 'feats': ['rand', 'reduce', 'scan', 'reduce', 'if'], 'ops': 43}

if __name__ == '__main__':
    from tritonpu.fuzz.differential import check_case
    from tritonpu.fuzz.generate import Case
    print(check_case(Case.from_file_text(open(__file__).read())).report())

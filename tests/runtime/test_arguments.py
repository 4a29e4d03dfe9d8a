"""What a launch accepts as arguments and options: torch tensors (bfloat16 included), non-contiguous
views of torch tensors and numpy arrays (the kernel's strides address the caller's memory), and
triton-ascend's launch options — on every backend."""
import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.errors import ExecutionError, LaunchError

torch = pytest.importorskip("torch")

BACKENDS = ["ref", "cpu", "npu"]


@tritonpu.jit
def scale2d(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    m = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * sxm + cols * sxn, mask=m)
    tl.store(y_ptr + rows * sym + cols * syn, x * 2 + 1, mask=m)


def _launch(x, y, backend, **opts):
    M, N = x.shape
    return scale2d[(tritonpu.cdiv(M, 16),)](x, y, M, N, *x.stride(), *y.stride(), BM=16, BN=32,
                                             backend=backend, **opts)


def _strides(a):           # numpy counts strides in bytes, Triton kernels in elements
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int8", "int32", "uint8", "float64"])
def test_torch_tensor_dtypes(backend, dtype):
    dt = getattr(torch, dtype)
    x = (torch.arange(40 * 24) % 50 - 20).to(dt).reshape(40, 24)
    y = torch.full((40, 24), 7).to(dt)
    _launch(x, y, backend)
    assert torch.equal(y, x * 2 + 1)           # exact in every dtype for these values


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_views_read_and_write_the_callers_memory(backend):
    base = torch.randn(48, 64)
    x = base.t()[5:35, 3:27]                    # transposed and sliced: strides (1, 64)
    out = torch.zeros(40, 60)
    y = out[2:32, 1::2][:, :24]                 # rows of 60, every other column
    assert not x.is_contiguous() and not y.is_contiguous()
    _launch(x, y, backend)
    expect = torch.zeros(40, 60)
    expect[2:32, 1::2][:, :24] = x * 2 + 1
    assert torch.equal(out, expect)             # written in place, nothing around the view touched


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_views_and_as_strided(backend):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((64, 50)).astype(np.float32)
    x = base[::2, 10:40]                        # step over rows
    out = np.zeros((32, 70), np.float32)
    y = out[:, ::2][:, 5:35]
    M, N = x.shape
    scale2d[(2,)](x, y, M, N, *_strides(x), *_strides(y), BM=16, BN=32, backend=backend)
    assert np.array_equal(y, x * 2 + 1)
    mask = np.ones_like(out, bool)
    mask[:, ::2][:, 5:35] = False
    assert not out[mask].any()
    # as_strided with overlapping rows (a sliding window): read-only use of overlapping memory
    t = torch.arange(100, dtype=torch.float32)
    win = t.as_strided((20, 8), (4, 1))
    res = torch.zeros(20, 8)
    _launch(win, res, backend)
    assert torch.equal(res, win * 2 + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_bounds_is_checked_against_the_views_span(backend):
    base = np.zeros((16, 32), np.float32)
    x = base[:8, :16]                           # the span ends at element 7*32+15 of base
    y = np.zeros((8, 16), np.float32)
    with pytest.raises(ExecutionError, match="out-of-bounds"):
        # rows 0..15 of a view with 8: the kernel reads past the view's last element
        scale2d[(1,)](x, y, 16, 16, 32, 1, 0, 1, BM=16, BN=32, backend=backend)


def test_views_that_cannot_be_bound_are_refused_with_what_works():
    x = np.arange(64, dtype=np.float32)[::-1]
    y = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"argument `x_ptr` is a view with negative strides \(-256, -4\): its "
                                          r"first element is not its lowest address; pass a copy"):
        scale2d[(1,)](x.reshape(1, 64), y.reshape(1, 64), 1, 64, 0, -1, 0, 1, BM=16, BN=32)
    meta = torch.zeros(4, 4, device="meta")
    with pytest.raises(LaunchError, match="tensor on meta; the virtual NPU reads host memory"):
        _launch(meta, meta, "ref")


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_that_requires_grad(backend):
    x = torch.randn(16, 32, requires_grad=True)
    y = torch.zeros(16, 32)
    _launch(x, y, backend)
    assert torch.equal(y, (x * 2 + 1).detach())


def test_bfloat16_matmul_from_torch():
    @tritonpu.jit
    def mm(a_ptr, b_ptr, c_ptr, K: tl.constexpr, N: tl.constexpr):
        offs = tl.arange(0, 32)
        a = tl.load(a_ptr + offs[:, None] * K + tl.arange(0, K)[None, :])
        b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
        tl.store(c_ptr + offs[:, None] * N + tl.arange(0, N)[None, :], tl.dot(a, b))

    a = torch.randn(32, 64).to(torch.bfloat16)
    b = torch.randn(64, 32).to(torch.bfloat16)
    ref = a.float() @ b.float()
    for backend in BACKENDS:
        c = torch.zeros(32, 32)
        mm[(1,)](a, b, c, K=64, N=32, backend=backend)
        torch.testing.assert_close(c, ref, rtol=1e-5, atol=1e-4)   # fp32 accumulation, order may differ


# -- triton-ascend's launch options -------------------------------------------------------------

def test_multibuffer_is_double_buffering():
    x = np.random.default_rng(1).standard_normal((4096, 32)).astype(np.float32)
    y1, y2, y3 = (np.zeros_like(x) for _ in range(3))
    isa, cycles = {}, {}
    for name, y, opt in (("off", y1, dict(multibuffer=False)), ("ref", y2, dict(double_buffer=False)),
                         ("on", y3, dict(multibuffer=True))):
        h = scale2d[(256,)](x, y, 4096, 32, 32, 1, 32, 1, BM=16, BN=32, **opt)
        isa[name], cycles[name] = h.asm["isa"], h.stats.cycles     # (h.asm: the latest launch's)
    assert isa["off"] == isa["ref"] != isa["on"]
    assert cycles["off"] == cycles["ref"] > cycles["on"]
    assert np.array_equal(y1, x * 2 + 1) and np.array_equal(y3, y1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_other_ascend_options_are_accepted_with_a_note(backend):
    x = np.ones((16, 32), np.float32)
    y = np.zeros_like(x)
    h = scale2d[(1,)](x, y, 16, 32, 32, 1, 32, 1, BM=16, BN=32, backend=backend, enable_auto_bind_sub_block=True,
                      optimize_dynamic_offset=True, auto_blockify_size=2, stream=None)
    assert np.array_equal(y, x * 2 + 1)
    assert [n.split(" has no effect")[0] for n in h.notes] == [
        "triton-ascend option enable_auto_bind_sub_block=True", "triton-ascend option optimize_dynamic_offset=True",
        "triton-ascend option auto_blockify_size=2", "triton-ascend option stream=None"]
    if backend == "npu":
        assert all(n in h.stats.notes for n in h.notes)


def test_unknown_option_stays_an_error():
    x = np.ones((16, 32), np.float32)
    with pytest.raises(LaunchError, match="unexpected keyword argument 'multi_buffer'"):
        scale2d[(1,)](x, x, 16, 32, 32, 1, 32, 1, BM=16, BN=32, multi_buffer=False)


def test_autotune_config_options_and_torch_trials_leave_the_callers_data_alone():
    @tritonpu.autotune(configs=[tritonpu.Config({"BLOCK": 32}, multibuffer=False), tritonpu.Config({"BLOCK": 64})],
                       key=["n"])
    @tritonpu.jit
    def accumulate(x_ptr, y_ptr, n, sy, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs * sy, tl.load(y_ptr + offs * sy, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)

    x = torch.arange(300, dtype=torch.float32)
    y = torch.ones(600)[::2]                    # a strided view, accumulated into
    accumulate[lambda meta: (tritonpu.cdiv(300, meta["BLOCK"]),)](x, y, 300, y.stride(0))
    assert torch.equal(y, x + 1)                # the trials ran on copies: added once
    assert len(accumulate.configs_timings) == 2


@tritonpu.jit
def _plus_one(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@pytest.mark.parametrize("cores", ["a", -1, 0, 2.5, True])
@pytest.mark.parametrize("backend", ["npu", "ref"])
def test_cores_must_be_a_whole_number_of_cores(cores, backend):
    """Before: cores="a" was a raw ValueError, cores=-1 an error about the grid."""
    x = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"cores= takes a whole number of cores >= 1 \(or None: the machine's\), "
                                          rf"got {cores!r}"):
        _plus_one[(4,)](x, BLOCK=16, cores=cores, backend=backend)
    assert not x.any()


@pytest.mark.parametrize("cores", [None, 1, 3, np.int64(5), 100])
def test_cores_as_a_number(cores):
    x = np.zeros(64, np.float32)
    h = _plus_one[(4,)](x, BLOCK=16, cores=cores)
    assert (x == 1).all() and h.stats.cores_used == min(4, int(cores or 24))


def test_testing_assert_close_takes_bf16_tensors_and_ones_that_require_grad():
    """triton.testing.assert_close raised TypeError on a bfloat16 tensor and RuntimeError on one
    that requires grad (Triton's converts them itself)."""
    torch = pytest.importorskip("torch")
    from tritonpu.testing import assert_close
    a = torch.linspace(-2, 2, 16).to(torch.bfloat16)
    assert_close(a, a.float())
    w = torch.nn.Parameter(torch.ones(4))
    assert_close(w, np.ones(4, np.float32))
    with pytest.raises(AssertionError):
        assert_close(a, a.float() + 1)


@pytest.mark.parametrize("backend", ["npu", "ref", "cpu"])
def test_a_masked_array_is_refused_and_a_memmap_runs_in_place(backend, tmp_path):
    """A masked array was a raw ValueError on npu and ref (and ran ignoring its mask on cpu)."""
    x = np.ma.masked_array(np.zeros(16, np.float32), mask=[0, 1] * 8)
    with pytest.raises(LaunchError, match=r"x_ptr is a numpy masked array: a kernel reads and writes every "
                                          r"element whatever its mask says; pass its \.data"):
        _plus_one[(1,)](x, BLOCK=16, backend=backend)
    m = np.memmap(tmp_path / "x.bin", np.float32, "w+", shape=(16,))
    _plus_one[(1,)](m, BLOCK=16, backend=backend)
    assert (np.asarray(m) == 1).all()


@tritonpu.jit
def _spin_kernel(f_ptr):
    v = tl.atomic_add(f_ptr, 0)
    while v == 0:
        v = tl.atomic_add(f_ptr, 0)


def test_max_steps_is_a_launch_option():
    """The hang message says 'raise max_steps if it is meant to', but a kernel launch refused it."""
    with pytest.raises(ExecutionError, match="program ran more than 20000 instructions") as e:
        _spin_kernel[(1,)](np.zeros(1, np.int32), max_steps=20000)
    assert e.value.line == _spin_kernel.src.first_line + 3                 # the while
    with pytest.raises(LaunchError, match=r"max_steps= takes a whole number of instructions >= 1, got 0"):
        _spin_kernel[(1,)](np.zeros(1, np.int32), max_steps=0)
    _spin_kernel[(1,)](np.ones(1, np.int32), max_steps=100)             # the flag is set: it ends

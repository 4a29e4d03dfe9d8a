"""The warm launch's shortcuts give what the general code gives: argument binding without
``inspect.Signature.bind``, counting a GM byte map's marked bytes, and what a relaunch reuses (the
compilation's key, ``h.asm`` and argument names; its operands' checked views unless traced; the
aliasing test)."""
import inspect

import numpy as np
import pytest

import tritonpu
import tritonpu.language as tl
from tritonpu.npu import gmmaps


@tritonpu.jit
def _scaled_copy(x_ptr, y_ptr, n, scale=2.0, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)


@pytest.mark.parametrize("args, kwargs", [
    ((1, 2, 3), {}),
    ((1, 2, 3, 4.0), {"BLOCK": 32}),
    ((1,), {"n": 3, "y_ptr": 2}),                  # keywords out of order
    ((), {"BLOCK": 16, "n": 3, "x_ptr": 1, "y_ptr": 2, "scale": 0.5}),
])
def test_binding_gives_what_signature_bind_gives(args, kwargs):
    bound, options = _scaled_copy.bind(args, dict(kwargs, sanitize=False))
    want = inspect.signature(_scaled_copy.fn).bind(*args, **kwargs)
    want.apply_defaults()
    assert list(bound.items()) == list(want.arguments.items())
    assert options == {"sanitize": False}


@pytest.mark.parametrize("args, kwargs, message", [
    ((1, 2), {}, "missing a required argument: 'n'"),
    ((1, 2, 3), {"x_ptr": 1}, "multiple values for argument 'x_ptr'"),
    ((1, 2, 3, 4.0, 64, 5), {}, "too many positional arguments"),
])
def test_a_bad_launch_is_still_reported_by_the_general_binding(args, kwargs, message):
    with pytest.raises(Exception, match=message):
        _scaled_copy.bind(args, dict(kwargs))


@pytest.mark.parametrize("nbytes, density", [(0, 0), (64, 0.0), (512, 0.3), (4096, 1.0), (1 << 20, 0.5)])
def test_counting_a_byte_map_counts_every_marked_bit(nbytes, density):
    rng = np.random.default_rng(nbytes)
    m = gmmaps.new(nbytes * 8)
    m[:] = np.packbits(rng.random(m.size * 8) < density)[:m.size]
    assert gmmaps.count(m) == int(np.unpackbits(m).sum())


def _stats_fields(st):
    return (st.cycles, st.core_cycles, st.pipe_busy, st.instr_count, st.bytes_by_path, st.stalls,
            st.read_bytes, st.write_bytes, st.roofline_cycles)


@pytest.mark.parametrize("sanitize", [False, True])
def test_a_relaunch_gives_what_the_first_launch_gives(sanitize):
    """A relaunch reuses the decoding (its operands' checked views too, unless traced) and what the
    launch found for the compilation (the key, ``h.asm``, the arguments' names): the same outputs
    and statistics as the first launch, with other data and sizes in between."""
    @tritonpu.jit
    def scale_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)

    rng = np.random.default_rng(0)
    runs = []
    for n in (1000, 200, 1000):
        x = rng.standard_normal(n).astype(np.float32)
        y = np.zeros(n, np.float32)
        h = scale_rows[(tritonpu.cdiv(n, 256),)](x, y, n, BLOCK=256, sanitize=sanitize)
        np.testing.assert_array_equal(y, x * np.float32(3.0))
        runs.append((_stats_fields(h.stats), sorted(h.asm)))
    assert runs[0] == runs[2]
    assert runs[0][0] != runs[1][0]            # (another size in between: other statistics)


def test_a_traced_relaunch_records_the_on_chip_high_water_marks_again():
    x = np.arange(64, dtype=np.float32)
    highs = []
    for _ in range(2):
        h = _scaled_copy[(1,)](x, np.zeros(64, np.float32), 64, trace=True, sanitize=False)
        highs.append(dict(h.stats._records.high))
    assert highs[0] == highs[1] and highs[0].get("ub", 0) > 0


def test_h_asm_shows_the_npu_stages_again_after_a_launch_on_another_backend():
    x = np.arange(64, dtype=np.float32)
    h = _scaled_copy[(1,)](x, np.zeros(64, np.float32), 64, sanitize=False)
    assert "isa" in h.asm
    h = _scaled_copy[(1,)](x, np.zeros(64, np.float32), 64, backend="ref")
    assert "isa" not in h.asm
    h = _scaled_copy[(1,)](x, np.zeros(64, np.float32), 64, sanitize=False)
    assert "isa" in h.asm and "tiling" in h.asm


def test_arguments_that_share_memory_are_found_whichever_is_written():
    """The launch compiles with ``may_alias`` when an array the kernel writes overlaps another
    pointer argument (before it or after it in the signature), not when only inputs overlap."""
    from tritonpu.codegen.pipeline import _share_memory
    buf = np.zeros(256, np.float32)
    kernel = _scaled_copy[(1,)](buf[:64], buf[64:128], 64, sanitize=False).kernel
    assert _share_memory(kernel, [buf[:64], buf[64:128], 64]) is False
    assert _share_memory(kernel, [buf[:64], buf[32:96], 64]) is True        # y overlaps x's end
    assert _share_memory(kernel, [buf[32:96], buf[:64], 64]) is True        # y overlaps x's start
    assert _share_memory(kernel, [buf[:64], buf[:0], 64]) is False          # an empty array


@pytest.mark.parametrize("options, env, skipped", [
    ({}, None, ()),
    ({"double_buffer": False}, None, ("double-buffer",)),
    ({}, "0", ("double-buffer",)),
    ({"disable_passes": ("l0c-ring", "hoist")}, None, ("l0c-ring", "hoist")),
])
def test_the_compilation_key_names_the_stages_that_run(monkeypatch, options, env, skipped):
    from tritonpu.codegen.pipeline import CODEGEN_PASSES, NPU_PIPELINE, _artifact_key
    if env is None:
        monkeypatch.delenv("TRITONPU_DOUBLE_BUFFER", raising=False)
    else:
        monkeypatch.setenv("TRITONPU_DOUBLE_BUFFER", env)
    want = ("npu",) + tuple(p for p in (*NPU_PIPELINE, *CODEGEN_PASSES) if p not in skipped)
    assert _artifact_key(options, False) == want
    assert _artifact_key(options, True) == want + ("may-alias",)


def test_a_launch_after_the_double_buffer_variable_changes_compiles_without_the_pass(monkeypatch):
    x = np.arange(64, dtype=np.float32)
    y = np.empty_like(x)
    monkeypatch.delenv("TRITONPU_DOUBLE_BUFFER", raising=False)
    assert "double-buffer" in _scaled_copy[(1,)](x, y, 64, sanitize=False).asm
    monkeypatch.setenv("TRITONPU_DOUBLE_BUFFER", "0")
    assert "double-buffer" not in _scaled_copy[(1,)](x, y, 64, sanitize=False).asm
    np.testing.assert_array_equal(y, x * 2.0)

"""The warm launch's shortcuts give what the general code gives: argument binding without
``inspect.Signature.bind``, and counting a GM byte map's marked bytes."""
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

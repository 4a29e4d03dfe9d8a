"""``triton.language.extra.cann.extension`` (triton-ascend's Ascend extensions, imported as ``al``):
what kernels written for triton-ascend call, with its meaning on the virtual NPU.

* ``extract_slice`` / ``insert_slice``: the sub-block at (possibly runtime) offsets with strides,
  and a block with one written in (also ``tl.extract_slice`` / ``tl.insert_slice`` and tensor
  methods);
* ``parallel``: ``tl.range`` (``bind_sub_block=True`` asks triton-ascend to split the loop over an
  AI core's two vector units; the virtual NPU's core has one vector pipe, so the loop runs as written);
* ``compile_hint(x, name, value)`` and ``multibuffer(x, 2)``: hints that do not change what a kernel
  computes (triton-ascend's own rule); tritonpu's passes decide buffering (``double_buffer``);
* ``sub_vec_id()`` / ``sub_vec_num()``: 0 and 1 (one vector unit per core).
Other names of the module are a ``CompilationError`` naming them.
"""
from __future__ import annotations

from tritonpu.language import core as tl
from tritonpu.language import semantic as S
from tritonpu.language.core import SemanticError, builtin
from tritonpu.language.functions import extract_slice, insert_slice


class parallel(tl.range):
    """``tl.range`` with triton-ascend's ``bind_sub_block`` (accepted; one vector unit per core here)."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 bind_sub_block=False):
        super().__init__(arg1, arg2, step, num_stages=num_stages, loop_unroll_factor=loop_unroll_factor)


@builtin
def compile_hint(ptr, hint_name, hint_val=None):
    """A hint for triton-ascend's compiler: checked as triton-ascend checks it, with no effect here."""
    name = tl._unwrap(hint_name)
    if not isinstance(name, str):
        raise SemanticError(f"compile_hint: the hint name must be a string, got {name!r}")
    value = tl._unwrap(hint_val)
    if isinstance(value, (list, tuple)) and not all(isinstance(tl._unwrap(v), int) for v in value):
        raise SemanticError("compile_hint: a list value must hold integers only")
    if value is not None and not isinstance(value, (bool, int, str, list, tuple)):
        raise SemanticError(f"compile_hint: unsupported hint value {value!r} (None, bool, int, str or a list of ints)")


@builtin
def multibuffer(src, size):
    """triton-ascend's ping-pong buffering hint for ``src`` (only ``size=2``, as there)."""
    if tl._unwrap(size) != 2:
        raise SemanticError(f"multibuffer supports size=2 only (as triton-ascend), got {tl._unwrap(size)!r}")


@builtin
def sub_vec_id():
    return S.scalar_constant(0, tl.int32)


@builtin
def sub_vec_num():
    return S.scalar_constant(1, tl.int32)


def __getattr__(name):
    raise AttributeError(f"triton-ascend's extension `{name}` is not supported by tritonpu yet (supported: "
                         f"{', '.join(__all__)})")


__all__ = ["compile_hint", "extract_slice", "insert_slice", "multibuffer", "parallel", "sub_vec_id", "sub_vec_num"]

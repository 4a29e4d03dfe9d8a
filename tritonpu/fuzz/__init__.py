"""Fuzzers for tritonpu: random Triton kernels checked across backends, mutated NPU assembly.

* ``generate``: an int seed -> a :class:`~tritonpu.fuzz.generate.Case` (kernel source and the
  recipe of its arguments), undefined behaviour avoided by construction;
* ``differential``: run a case on ``ref`` (the definition), ``npu``, ``cpu`` and the NPU with
  optional passes off, compare every array (bit for bit where the ops are exactly rounded);
* ``shrink``: reduce a failing case to a small kernel that fails the same way;
* ``isa``: mutate valid ``.s`` programs; assembling and simulating them must end in a result or a
  tritonpu error, never a raw Python exception, never beyond a time bound.

Campaigns: ``python bench/fuzz.py --minutes N --seed S [--isa]``; CI: ``tests/fuzz/``.
"""

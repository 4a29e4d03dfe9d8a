"""``import triton.runtime.driver as driver`` (a module in Triton): the same object as
``triton.runtime.driver`` — ``driver.active`` answers device queries (see :mod:`.device`)."""
from tritonpu.runtime.device import driver as _driver

active = _driver.active

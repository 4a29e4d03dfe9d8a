"""Session-wide test setup.

* ``TRITONPU_CACHE_DIR`` points at a temporary folder for the whole session, so tests never touch
  ``~/.cache``; ``TRITONPU_DUMP_DIR`` and ``TRITONPU_BACKEND`` are cleared.
* Every kernel any test compiles is round-tripped through the IR printer and parser and verified
  (see ``tests/ir/test_roundtrip.py`` for the explicit tests): a kernel whose IR does not
  print -> parse -> print identically fails the test that compiled it.
* The tests of ``tests/npu`` and ``tests/kernels`` run every NPU launch on both engines and compare
  them (``TRITONPU_NPU_ENGINE=check``, the differential test of the translating engine) unless
  ``TRITONPU_NPU_ENGINE`` is set; ``TRITONPU_NPU_ENGINE=check python -m pytest -q`` checks the
  whole suite that way.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/tpu_util.py, imported by the tests

from tritonpu.ir import parse_function, print_function, verify  # noqa: E402
from tritonpu.runtime import hooks  # noqa: E402


def _roundtrip_listener(jitfn, kernel):
    text = kernel.asm["ir"]
    fn = parse_function(text)
    verify(fn)
    again = print_function(fn)
    assert again == text, f"IR of {kernel.name} does not round-trip:\n{text}\n---\n{again}"


@pytest.fixture(autouse=True)
def _npu_engines_checked(request, monkeypatch):
    if "TRITONPU_NPU_ENGINE" not in os.environ and request.node.path.parent.name in ("npu", "kernels"):
        monkeypatch.setenv("TRITONPU_NPU_ENGINE", "check")


@pytest.fixture(scope="session", autouse=True)
def _session_env(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TRITONPU_CACHE_DIR", str(tmp_path_factory.mktemp("tritonpu-cache")))
    mp.delenv("TRITONPU_DUMP_DIR", raising=False)
    mp.delenv("TRITONPU_BACKEND", raising=False)
    hooks.add_listener(_roundtrip_listener)
    yield
    hooks.remove_listener(_roundtrip_listener)
    mp.undo()

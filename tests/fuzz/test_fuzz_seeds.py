"""The fuzzers on fixed seeds (``tritonpu.fuzz``): generated kernels must give the reference's
bits on the NPU, the cpu backend and the NPU with an optional pass off; mutated assembly must end
in a result or a tritonpu error.  A failure prints the kernel (or the mutant) to reproduce it:
save the kernel text as a file and run it with python, or run ``python bench/fuzz.py --count 1
--seed S``.  Campaigns over many more seeds: ``python bench/fuzz.py --minutes N --seed S [--isa]``.
"""
from __future__ import annotations

import numpy as np
import pytest

from tritonpu.fuzz import differential, isa
from tritonpu.fuzz.differential import check_case, compare
from tritonpu.fuzz.generate import generate

# 200 kernels, each on ref, npu and cpu, every other one also on one NPU variant (a pass off, or
# another core count); 2000 ISA mutants.  About 100 s on a 2-core machine.
KERNEL_CHUNKS, KERNELS_PER_CHUNK = 10, 20
MUTANT_CHUNKS, MUTANTS_PER_CHUNK = 5, 400


@pytest.mark.parametrize("chunk", range(KERNEL_CHUNKS))
def test_generated_kernels_agree_with_the_reference(chunk):
    failures = []
    for seed in range(chunk * KERNELS_PER_CHUNK, (chunk + 1) * KERNELS_PER_CHUNK):
        v = check_case(generate(seed), n_variants=seed % 2, timeout=120)
        if v.status == "fail":
            failures.append(v.report())
    assert not failures, "\n\n".join(failures)


@pytest.fixture(scope="module")
def corpus():
    return isa.corpus(range(4))


@pytest.mark.parametrize("chunk", range(MUTANT_CHUNKS))
def test_isa_mutants_end_in_a_result_or_a_tritonpu_error(chunk, corpus):
    findings = isa.fuzz_isa(MUTANTS_PER_CHUNK, seed=chunk, seeds=corpus, timeout=10)
    assert not findings, "\n\n".join(f"{r.category} (from {r.seed}): {r.detail}\nmutant:\n{r.text}"
                                     for r in findings[:3])


def test_the_comparison_rules():
    """Bit for bit, except NaN sign/payload, zero signs where max/min are involved, and a
    tolerance for values the generator marks approximate."""
    want = np.array([1.0, -0.0, np.nan, 2.0], np.float32)
    assert compare(want.copy(), want).size == 0
    assert compare(np.array([1.0, 0.0, -np.nan, 2.0], np.float32), want).tolist() == [1]
    assert compare(np.array([1.0, 0.0, -np.nan, 2.0], np.float32), want, zero_sign_ok=True).size == 0
    assert compare(np.array([1.0, -0.0, 1.0, 2.0000002], np.float32), want).tolist() == [2, 3]
    assert compare(np.array([1.0, -0.0, np.nan, 2.0000002], np.float32), want, approx=1).size == 0


@pytest.mark.parametrize("fault", ["wrong bits", "python error"])
def test_a_faulty_backend_fails_the_check_with_the_kernel_source(monkeypatch, fault):
    real = differential.run_case

    def faulty(kern, case, run, timeout=60.0):
        arrays = real(kern, case, run, timeout)
        if run.name == "npu":
            if fault == "python error":
                raise KeyError("x_ptr")
            arrays[-1].reshape(-1).view(np.uint8)[0] ^= 1
        return arrays
    monkeypatch.setattr(differential, "run_case", faulty)
    v = check_case(generate(0), n_variants=0)
    assert v.status == "fail"
    assert v.failures == ["mismatch:npu" if fault == "wrong bits" else "internal:npu"]
    assert "def kern(" in v.report()

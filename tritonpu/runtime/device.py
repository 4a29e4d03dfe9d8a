"""``triton.runtime.driver`` for the virtual NPU: what scripts written for Triton ask the device.

``driver.active.utils.get_device_properties(device)`` answers with the default preset machine
(``ascend910b``, what launches run on) in the keys Triton scripts read, with the NPU's
meaning: ``multiprocessor_count`` — AI cores (grid programs are spread over them; the usual
``min(NUM_SM, n_tiles)`` persistent grid works unchanged), ``max_shared_mem`` — Unified Buffer
bytes per core, ``warpSize`` — 1 (a program is one instruction stream; there are no warps),
``max_num_regs`` — scalar registers per core, ``clock_rate`` — kHz; triton-ascend's ``num_aicore`` and
``num_vectorcore`` — both the core count (each AI core runs the cube and the vector unit). ``get_current_target()``
names the backend (``"npu"``) and the machine (``arch``); ``get_active_torch_device()`` is the
CPU (torch tensors on it are launched in place).
"""
from __future__ import annotations

from dataclasses import dataclass

from tritonpu.isa import machine as _machine

SCALAR_REGISTERS = 64           # s0..s63 (isa/REFERENCE.md)


def _preset():
    return _machine("ascend910b")


@dataclass(frozen=True)
class GPUTarget:                # (the name Triton gives it)
    backend: str
    arch: str
    warp_size: int


class _Utils:
    @staticmethod
    def get_device_properties(device=0) -> dict:
        m = _preset()
        return {"multiprocessor_count": m.cores, "max_shared_mem": m.capacity["ub"], "warpSize": 1,
                "max_num_regs": SCALAR_REGISTERS, "clock_rate": int(m.clock_ghz * 1e6),
                "name": m.name,
                # triton-ascend's keys: grid sizes for cube and vector kernels; the virtual NPU's AI
                # cores each run the cube and the vector unit, so both are its core count
                "num_aicore": m.cores, "num_vectorcore": m.cores}


class _Driver:
    utils = _Utils()

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def set_current_device(device) -> None:
        if int(device) != 0:
            raise ValueError(f"the virtual NPU is device 0, got {device}")

    @staticmethod
    def get_current_target() -> GPUTarget:
        return GPUTarget("npu", _preset().name, 1)

    @staticmethod
    def get_active_torch_device():
        """The torch device a Triton script allocates its tensors on (the first line of Triton's
        tutorials: ``DEVICE = triton.runtime.driver.active.get_active_torch_device()``): the CPU,
        whose tensors launches read and write in place."""
        try:
            import torch
        except ImportError:
            raise ImportError("get_active_torch_device() returns a torch device and needs torch "
                              "(pip install torch, or the 'test' extra); launches take numpy arrays "
                              "without it") from None
        return torch.device("cpu")


class _Active:
    active = _Driver()


driver = _Active()

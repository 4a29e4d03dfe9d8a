"""The virtual NPU: assembler, interpreter with cycle model, profile, sanitizer.

```python
from tritonpu.npu import assemble, AsmError, NpuError
prog = assemble(text, filename="k.s")      # -> Program; AsmError(line, col, text) on errors
stats = prog.run({"x": x, "n": 1024}, grid=(8,), machine="ascend910b", sanitize=True,
                 trace=False, cores=None)  # GM arrays written in place
stats.cycles, stats.pipe_busy, stats.profile_table(), stats.write_trace("t.json")
```
"""
from .assembler import assemble
from .errors import (AsmError, AssertError, DeadlockError, FlagError, LaunchError, MisalignedError, NpuError,
                     OutOfBoundsError, RaceError)
from .program import Inst, Mem, Program, Val
from .stats import Stats

__all__ = ["assemble", "AsmError", "NpuError", "OutOfBoundsError", "MisalignedError",
           "DeadlockError", "FlagError", "AssertError", "RaceError", "LaunchError", "Program", "Inst", "Mem",
           "Val", "Stats"]

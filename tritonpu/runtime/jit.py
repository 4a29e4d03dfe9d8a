"""``@tritonpu.jit``: specialization, caching and launching.

A kernel is compiled once per specialization — argument types, constexpr values, options and
compiler version — and kept in memory and on disk (see :mod:`.cache`). ``kernel[grid](...)``
binds the arguments, finds or builds the compiled kernel, and runs it on the chosen backend
(``backend=`` on the launch, else ``TRITONPU_BACKEND``, else the default).
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import math
import operator
import os
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from tritonpu import __version__
from tritonpu.errors import CompilationError, GlobalChangedError, LaunchError, TritonpuError
from tritonpu.frontend.codegen import SourceInfo, generate, parse_function_ast
from tritonpu.ir import Function, parse_function, print_function, verify
from tritonpu.ir import types as T
from tritonpu.language import core as tl
from tritonpu.runtime import cache as disk_cache
from tritonpu.runtime import hooks
from tritonpu.runtime import options as launch_options
from tritonpu.runtime.arrays import as_array, gm_span
from tritonpu.runtime.options import TRITON_OPTIONS
from tritonpu.tools.tensor_descriptor import TensorDescriptor

BACKENDS = ("ref", "cpu", "npu")
DEFAULT_BACKEND = "npu"


@dataclass
class CompiledKernel:
    name: str
    fn: Function
    asm: dict = field(default_factory=dict)
    key: str = ""
    compile_seconds: float = 0.0
    from_disk: bool = False
    backend_artifacts: dict = field(default_factory=dict)


@dataclass
class LaunchHandle:
    """What a launch returns: the compiled stages and, on the NPU, the profile."""

    kernel: CompiledKernel
    grid: tuple
    backend: str
    stats: object = None
    notes: list = field(default_factory=list)     # what the launch's options did not do
    ran: dict = None                              # the stages this launch ran (see ``asm``)

    @property
    def asm(self) -> dict:
        """The text of every stage this launch ran (a later launch of the kernel with other options
        compiles other stages; this handle keeps its own)."""
        return self.ran if self.ran is not None else self.kernel.asm

    @property
    def name(self) -> str:
        return self.kernel.name

    def __repr__(self) -> str:
        # one line: a REPL echoes the handle of every bare launch (the dataclass repr printed every
        # stage's text, 241k characters for a small kernel)
        st = self.stats
        prof = (f", cycles={st.cycles}, efficiency={st.efficiency:.3f}" if st is not None and
                hasattr(st, "cycles") else "")
        notes = f", notes={len(self.notes)}" if self.notes else ""
        return f"<{type(self).__name__} {self.name} grid={self.grid} backend={self.backend!r}{prof}{notes}>"


class WarmedKernel(LaunchHandle):
    """What ``kernel.warmup(...)`` returns: the compiled kernel, as Triton's ``CompiledKernel``
    offers it to scripts that size their grid from it (the fused-softmax tutorial).

    ``warmed[grid](*args)`` launches it: positional arguments fill the kernel's parameters in
    order, and the ones left out (the tutorial's trailing constexprs) keep their warmup values;
    the warmup's options (``backend=``, ...) carry over.  ``metadata.shared`` is the Unified
    Buffer bytes one program needs on the NPU (tiles and temporaries).  An AI core runs one
    program at a time, so ``n_regs`` is the scalar register file's share per warp
    (``max_num_regs // num_warps``): Triton's occupancy formula ``max_num_regs // (n_regs *
    warpSize * num_warps)`` then gives 1.
    """

    def __init__(self, kernel, grid, backend, jitfn, bound, options):
        super().__init__(kernel, grid, backend)
        self._jit, self._bound, self._options = jitfn, bound, options
        self._metadata = None

    def _init_handles(self) -> None:
        """Triton loads the binary onto the device here; nothing to load for the simulator."""

    @property
    def n_regs(self) -> int:
        from tritonpu.runtime.device import SCALAR_REGISTERS
        return max(1, SCALAR_REGISTERS // max(1, int(self._options.get("num_warps") or 4)))

    n_spills = 0
    n_max_threads = 1

    @property
    def metadata(self):
        if self._metadata is None:
            import types
            self._metadata = types.SimpleNamespace(
                name=self.kernel.name, shared=self._ub_bytes(), num_warps=self._options.get("num_warps", 4),
                num_stages=self._options.get("num_stages", 3), num_ctas=1, backend=self.backend)
        return self._metadata

    def _ub_bytes(self) -> int:
        if self.backend != "npu":
            return 0
        from tritonpu.codegen.pipeline import artifact      # (the launch that follows reuses it)
        scalars = {p.name: tl._unwrap(self._bound[p.name]) for p in self.kernel.fn.args if not p.type.is_ptr}
        return artifact(self.kernel, self._options, scalars).ub_bytes

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            names = list(self._jit.signature.parameters)
            if len(args) > len(names):
                raise LaunchError(f"`{self.kernel.name}` takes {len(names)} arguments, got {len(args)}")
            given = {**dict(zip(names, args)), **kwargs}
            merged = {n: given[n] if n in given else self._bound[n] for n in names}
            return self._jit.run(**merged, **self._options, grid=grid)
        return launch


def _is_constexpr_annotation(ann) -> bool:
    if ann is tl.constexpr:
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "constexpr"


_PTR_TYPES: dict = {}       # numpy dtype -> the pointer type a plain ndarray of it specializes to


def arg_type(name: str, value) -> T.Type:
    """The IR type a runtime argument specializes to."""
    if type(value) is np.ndarray:       # the common case, memoized (a dtype tritonpu lacks still raises)
        t = _PTR_TYPES.get(value.dtype)
        if t is not None:
            return t
        t = _arg_type(name, value)
        _PTR_TYPES[value.dtype] = t
        return t
    return _arg_type(name, value)


def _arg_type(name: str, value) -> T.Type:
    if isinstance(value, (bool, np.bool_)):
        return T.i1
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.ndarray):
        if isinstance(value, np.integer):
            return T.scalar(str(np.dtype(type(value)).name).replace("int", "i").replace("ui", "u"))
        v = int(value)
        if -2**31 <= v < 2**31:
            return T.i32
        if -2**63 <= v < 2**63:
            return T.i64
        if 0 <= v < 2**64:
            return T.scalar("u64")
        raise LaunchError(f"argument `{name}` = {v} does not fit in 64 bits")
    if isinstance(value, (float, np.floating)):
        return T.scalar("f64") if isinstance(value, np.float64) and not isinstance(value, float) else T.f32
    arr = as_array(value, name)
    if arr is None:
        raise LaunchError(f"argument `{name}` has unsupported type {type(value).__name__}; pass a numpy array, "
                          "an int, a float or a bool")
    from tritonpu import dtypes
    try:
        kind = dtypes.from_numpy(arr.dtype)
    except KeyError:
        raise LaunchError(f"argument `{name}` has dtype {arr.dtype}, which tritonpu does not support") from None
    return T.PointerType(T.scalar(kind.name))


def _is_host_descriptor(value) -> bool:
    return isinstance(value, TensorDescriptor)


def _descriptor_param(name, desc):
    """The specialization of a host TensorDescriptor argument (see language/descriptor.py)."""
    from tritonpu.language.descriptor import host_descriptor_param
    base = arg_type(f"{name}.base", desc.base)
    return host_descriptor_param(base, [arg_type(f"{name}.shape", v) for v in desc.shape],
                                 [arg_type(f"{name}.strides", v) for v in desc.strides[:-1]], desc.block_shape,
                                 desc.padding)


def _is_one(value) -> bool:
    """An integer argument equal to 1, which Triton compiles as the constant 1."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value == 1


_MISSING = object()


def _resolve(g: dict, chain: tuple):
    """``g[chain[0]].chain[1]...`` (``_MISSING`` when a name is gone)."""
    v = g.get(chain[0], _MISSING)
    for a in chain[1:]:
        v = getattr(v, a, _MISSING)
    return v


def _value_key(v):
    """What a compilation depends on of a global value it reads: its repr for constexpr values,
    numbers, strings, dtypes and tuples of them; None for what cannot change the code (a module, a
    builtin, a Python function)."""
    if isinstance(v, tl.constexpr):
        v = v.value
    if isinstance(v, (int, float, bool, str, type(None), tl.dtype)) or \
            (isinstance(v, tuple) and all(isinstance(x, (int, float, bool, str, tl.dtype)) for x in v)):
        return f"{type(v).__name__}:{v!r}"
    return None


def _constexpr_key(v) -> str:
    """A constexpr argument in a compilation's key: a @jit function by its source (and what it
    reads), not its name."""
    if is_jit_function(v):
        return f"jit:{v.__module__}:{v.__qualname__}:{v.source_hash()}"
    return repr(v)


def is_jit_function(v) -> bool:
    return getattr(v, "__tritonpu_jit__", False) and isinstance(v, JITFunction)


class CaptureScope(Mapping):
    """The names a kernel's body reads from outside: the variables of enclosing functions it
    captures (its closure cells, read when looked up), then its module's globals — Triton's
    ``get_capture_scope``, so a kernel made by a factory (``make_kernel(activation)``) sees the
    factory's values, not a global of the same name."""

    def __init__(self, fn):
        self.globals = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def __getitem__(self, name):
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:              # a variable the enclosing function has not set yet
                raise KeyError(name) from None
        return self.globals[name]

    def __iter__(self):
        yield from self.cells
        yield from (n for n in self.globals if n not in self.cells)

    def __len__(self):
        return len(set(self.cells) | set(self.globals))


class JITFunction:
    __tritonpu_jit__ = True

    def __init__(self, fn, do_not_specialize=None, debug=None, noinline=None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.constexpr_names = {n for n, p in self.signature.parameters.items()
                                if _is_constexpr_annotation(p.annotation)}
        # Triton specializes integer arguments equal to 1 (strides, mostly) unless told not to
        dns = do_not_specialize or ()
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in dns}
        # plain parameters (no *args, **kwargs, positional- or keyword-only): launches bind them
        # without inspect.Signature.bind (the slow path still reports a bad launch)
        P = inspect.Parameter
        self._plain_params = all(p.kind is P.POSITIONAL_OR_KEYWORD for p in self.signature.parameters.values())
        self._defaults = {n: p.default for n, p in self.signature.parameters.items() if p.default is not P.empty}
        self._keys: dict = {}           # (source hash, signature, options, fingerprint) -> key
        self.debug = debug              # device_assert checks (None: the launch's debug=, else TRITON_DEBUG)
        self._src = None
        self._ast = None
        self._hash = None
        self._used_globals: list = []
        self.cache: dict = {}
        self.scope = CaptureScope(fn)

    # -- source ----------------------------------------------------------------------------
    @property
    def src(self) -> SourceInfo:
        if self._src is None:
            try:
                self._src = SourceInfo(self.fn)
            except (OSError, TypeError) as e:
                raise CompilationError(f"cannot read the source of `{self.__name__}`: {e}") from None
        return self._src

    @property
    def ast(self) -> ast.FunctionDef:
        if self._ast is None:
            self._ast = parse_function_ast(self)
        return self._ast

    def source_hash(self, _seen=None) -> str:
        """Hash of this function's source, where it starts in its file, and everything global it
        uses: @jit functions it calls (by name or through a module: ``hp.act``), constexpr values,
        numbers, strings and dtypes, read by name or as a module's attribute.  Raises
        :class:`GlobalChangedError` when one of those changed since it was first computed (as
        Triton does: a kernel reads its globals when it is compiled)."""
        if self._hash is not None:
            self._check_globals(set())
            return self._hash
        seen = _seen if _seen is not None else set()
        seen.add(id(self))
        h = hashlib.sha256(self.src.src.encode())
        h.update(f"@{self.src.first_line}".encode())        # error messages name the file's lines
        used = []
        for dotted, chain, node in self._global_reads():
            v = _resolve(self.scope, chain)
            if is_jit_function(v):
                key = v.source_hash(seen) if id(v) not in seen else "recursive"
            else:
                key = _value_key(v)
                if key is None:
                    continue
            h.update(f"{dotted}={key}".encode())
            used.append((dotted, chain, node, v, key))
        self._used_globals = used
        self._hash = h.hexdigest()
        return self._hash

    def _global_reads(self) -> list:
        """(dotted name, chain of names, AST node) of each global the function reads: a name that is
        neither a parameter nor assigned in the function, and a global module's attributes."""
        g = self.scope
        local = set(self.arg_names)
        for n in ast.walk(self.ast):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                local.add(n.id)
            elif isinstance(n, ast.arg):            # a lambda's (a combine function's) parameters
                local.add(n.arg)
        out: dict = {}
        for node in ast.walk(self.ast):
            chain, n = [], node
            while isinstance(n, ast.Attribute):
                chain.append(n.attr)
                n = n.value
            if not isinstance(n, ast.Name) or not isinstance(n.ctx, ast.Load) or n.id in local or n.id not in g:
                continue
            chain = (n.id,) + tuple(reversed(chain))
            # a module's attributes are read when the module is the only thing read before them
            k = 1
            while k < len(chain) and isinstance(_resolve(g, chain[:k]), types.ModuleType):
                k += 1
            chain = chain[:k]
            out.setdefault(".".join(chain), (chain, node))
        return [(d, c, node) for d, (c, node) in sorted(out.items())]

    def _check_globals(self, seen: set) -> None:
        """Raise GlobalChangedError when a global this function (or a @jit function it calls) read
        when it was hashed has another value now."""
        if id(self) in seen or self._hash is None:
            return
        seen.add(id(self))
        g = self.scope
        for dotted, chain, node, old, key in self._used_globals:
            v = _resolve(g, chain)
            if v is old:
                if is_jit_function(v):
                    v._check_globals(seen)
                continue
            now = (v.source_hash() if is_jit_function(v) else _value_key(v)) if v is not _MISSING else None
            if now != key:
                loc = self.src.loc(node)
                was = "a different @jit function" if is_jit_function(old) else repr(getattr(old, "value", old))
                new = ("undefined" if v is _MISSING else "a different @jit function" if is_jit_function(v)
                       else repr(getattr(v, "value", v)))
                raise GlobalChangedError(
                    f"global `{dotted}` has changed since `{self.__name__}` was compiled (from {was} to {new}); "
                    "a kernel reads its globals once, when it is compiled (as in Triton): pass the value as a "
                    "tl.constexpr argument instead", loc.file, loc.line, loc.col)

    # -- calling -----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@jit function `{self.__name__}` must be launched as {self.__name__}[grid](...) or "
                           "called from another @jit function")

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    def bind(self, args, kwargs):
        """Split a launch's arguments into kernel arguments and options."""
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in launch_options.ALL
                   and k not in self.signature.parameters}
        if self._plain_params:
            bound = self._fast_bind(args, kwargs)
            if bound is not None:
                return bound, options
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise LaunchError(f"bad launch of `{self.__name__}`: {e}{self._unknown_keywords(kwargs)}") from None
        bound.apply_defaults()
        return dict(bound.arguments), options

    def _fast_bind(self, args, kwargs) -> dict | None:
        """What ``signature.bind`` + ``apply_defaults`` gives (in the signature's order) for plain
        parameters; None when the launch is not a well-formed one (the slow path reports why)."""
        names = self.arg_names
        if len(args) > len(names):
            return None
        got = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in got or k not in self.signature.parameters:
                return None
            got[k] = v
        out = {}
        for n in names:
            if n in got:
                out[n] = got[n]
            elif n in self._defaults:
                out[n] = self._defaults[n]
            else:
                return None
        return out

    def _unknown_keywords(self, kwargs) -> str:
        """What a launch's keywords that are neither parameters nor options may have meant."""
        import difflib
        names = list(self.signature.parameters) + sorted(launch_options.ALL)
        out = []
        for k in kwargs:
            if k not in self.signature.parameters:
                close = difflib.get_close_matches(k, names, n=1)
                out.append(f"`{k}`" + (f" (did you mean `{close[0]}`?)" if close else ""))
        if not out:
            return ""
        return (f"; {', '.join(out)} {'is' if len(out) == 1 else 'are'} neither a parameter of the kernel "
                "nor a launch option")

    def specialize(self, bound: dict) -> tuple[list, list]:
        """(params for the frontend, runtime argument values)."""
        params, runtime = [], []
        for name, value in bound.items():
            value = tl._unwrap(value)
            if name in self.constexpr_names or value is None:
                params.append((name, tl.constexpr(value)))
            elif _is_host_descriptor(value):
                spec = _descriptor_param(name, value)
                params.append((name, spec))
                runtime += [value.base] + list(value.shape) + list(value.strides[:-1])
            elif _is_one(value) and name not in self.do_not_specialize:
                params.append((name, tl.constexpr(1)))
            else:
                params.append((name, arg_type(name, value)))
                runtime.append(value)
        return params, runtime

    def debug_for(self, options: dict) -> bool:
        """Whether this compilation checks ``tl.device_assert`` (and ``assert`` on tensors): as in
        Triton, the launch's ``debug=``, else ``@jit(debug=)``, else ``TRITON_DEBUG`` set to
        something other than 0."""
        if options.get("debug") is not None:
            return bool(options["debug"])
        if self.debug is not None:
            return bool(self.debug)
        return os.environ.get("TRITON_DEBUG", "0").strip() not in ("", "0")

    def compile(self, params: list, options: dict) -> CompiledKernel:
        sig = tuple((n, str(p) if not isinstance(p, tl.constexpr) else ("constexpr", _constexpr_key(p.value)))
                    for n, p in params)
        debug = self.debug_for(options)
        opts = tuple(sorted((k, repr(v)) for k, v in options.items() if k in TRITON_OPTIONS and k != "debug"))
        opts += (("debug", debug),)
        src_hash = self.source_hash()       # (checks the globals it read: GlobalChangedError)
        memo = (src_hash, sig, opts, disk_cache.compiler_fingerprint())
        key = self._keys.get(memo)
        if key is None:
            key_src = repr((src_hash, self.src.file, sig, opts, __version__, memo[3]))
            key = hashlib.sha256(key_src.encode()).hexdigest()[:32]
            self._keys[memo] = key
        kernel = self.cache.get(key)
        if kernel is not None:
            return kernel
        t0 = time.perf_counter()
        entry = disk_cache.load(key)
        if entry is not None:
            try:
                fn = parse_function(entry["ir"])
                verify(fn)
                kernel = CompiledKernel(self.__name__, fn, dict(entry["asm"]), key, from_disk=True)
            except Exception:
                kernel = None
        if kernel is None:
            attrs = {n: p.value for n, p in params if isinstance(p, tl.constexpr)
                     and isinstance(p.value, (int, float, bool, str))}
            fn = generate(self, params, attrs, debug=debug)
            try:
                verify(fn)
            except Exception as e:  # a frontend bug, not a user mistake: still point at the kernel
                raise CompilationError(f"internal error: the frontend produced invalid IR: {e}",
                                       self.src.file, self.src.first_line) from None
            text = print_function(fn)
            kernel = CompiledKernel(self.__name__, fn, {"ir": text}, key)
            disk_cache.store(key, {"ir": text, "asm": kernel.asm})
        kernel.compile_seconds = time.perf_counter() - t0
        self.cache[key] = kernel
        hooks.compiled(self, kernel)
        return kernel

    def run(self, *args, grid, warmup=False, **kwargs) -> LaunchHandle:
        try:
            return self._run(args, kwargs, grid, warmup)
        except TritonpuError as e:
            # A user mistake: show where it is in the kernel, not the compiler's own frames.
            raise e.with_traceback(None) from None

    def _run(self, args, kwargs, grid, warmup) -> LaunchHandle:
        bound, options = self.bind(args, kwargs)
        options, notes = launch_options.resolve(options)
        if "trace" not in options and os.environ.get("TRITONPU_TRACE", "0") not in ("", "0"):
            options["trace"] = True         # `tritonpu run --profile=source/--report/...` asks for timelines
        params, runtime = self.specialize(bound)
        kernel = self.compile(params, options)
        grid = _normalize_grid(grid, {**bound, **options})
        backend = options.get("backend") or os.environ.get("TRITONPU_BACKEND") or DEFAULT_BACKEND
        if backend not in BACKENDS:
            raise LaunchError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        if warmup:
            return WarmedKernel(kernel, grid, backend, self, bound, options)
        handle = LaunchHandle(kernel, grid, backend, notes=notes)
        arrays = [gm_span(as_array(v, p.name), p.name) if p.type.is_ptr else v
                  for p, v in zip(kernel.fn.args, runtime)]
        read_only = [p.name for p, a in zip(kernel.fn.args, arrays) if p.type.is_ptr and not a.flags.writeable]
        if read_only:
            from tritonpu.codegen.pipeline import written_args
            written = written_args(kernel)
            hit = [n for n in read_only if written is not None and n in written]
            if hit:
                raise LaunchError(f"argument `{hit[0]}` is a read-only array but the kernel stores to it; pass "
                                  "a writeable array (e.g. a copy)")
        from tritonpu.runtime import backends
        try:
            handle.stats = backends.launch(backend, kernel, arrays, grid, options)
        except CompilationError as e:
            from tritonpu.runtime.config_space import is_resource_error
            if backend != "npu" or not is_resource_error(e.message):
                raise
            from tritonpu.runtime.fit_hint import size_that_fits
            scalars = {p.name: a for p, a in zip(kernel.fn.args, arrays) if not p.type.is_ptr}
            hint = size_that_fits(self, bound, options, scalars)
            raise CompilationError(e.message + hint, e.file, e.line, e.col) from None
        handle.ran = kernel.asm         # (the NPU backend replaces the dict when its stages change)
        if notes and handle.stats is not None and hasattr(handle.stats, "notes"):
            handle.stats.notes = list(handle.stats.notes or []) + notes
        hooks.launched(self, handle, options)
        return handle

    def warmup(self, *args, grid, **kwargs) -> LaunchHandle:
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def _normalize_grid(grid, meta: dict) -> tuple[int, int, int]:
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        dims = [operator.index(tl._unwrap(g)) for g in grid]
    except TypeError:
        bad = next((g for g in (grid if isinstance(grid, (tuple, list)) else ()) if not _is_index(g)), None)
        if isinstance(bad, (float, np.floating)):
            shown = tuple(g.item() if isinstance(g, np.generic) else g for g in grid)
            raise LaunchError(f"grid dimension {float(bad)!r} is not an integer (a division? use triton.cdiv(n, "
                              f"BLOCK) or //); got grid {shown!r}") from None
        raise LaunchError(f"grid must be a tuple of 1 to 3 ints (or a function returning one), got {grid!r}") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"grid must have 1 to 3 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise LaunchError(f"grid dimensions must be >= 0, got {tuple(dims)}")
    full = tuple(dims + [1] * (3 - len(dims)))
    if math.prod(full) > MAX_PROGRAMS:
        raise LaunchError(f"a grid of {math.prod(full)} programs {full} is more than {MAX_PROGRAMS} "
                          "(2**31 - 1: program ids are 32-bit)")
    return full


MAX_PROGRAMS = 2 ** 31 - 1


def _is_index(g) -> bool:
    try:
        operator.index(tl._unwrap(g))
        return True
    except TypeError:
        return False


def jit(fn=None, *, do_not_specialize=None, debug=None, noinline=None, repr=None, launch_metadata=None):
    """Decorator compiling a Triton-style kernel for tritonpu (``@tritonpu.jit`` or ``@tritonpu.jit(...)``)."""
    def wrap(f):
        return JITFunction(f, do_not_specialize, debug, noinline, repr, launch_metadata)
    return wrap(fn) if fn is not None else wrap

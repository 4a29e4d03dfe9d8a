"""The launch options a kernel accepts, in one table per origin: Triton's, triton-ascend's and
tritonpu's own.

Guarantees: every option in these tables is accepted on every backend; an option that changes
what runs on the virtual NPU maps to its tritonpu meaning (``multibuffer`` is double buffering);
the others change nothing and leave one note per launch in ``h.notes`` (and ``h.stats.notes``
on the NPU) saying so and why; a keyword that is neither an option nor a kernel parameter stays
a ``LaunchError``.
"""
from __future__ import annotations

# Triton's launch options: accepted and recorded; the simulated machine has no warps or CTAs;
# ``debug`` checks tl.device_assert, as in Triton (JITFunction.debug_for).
TRITON_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                  "enable_warp_specialization", "debug")

# tritonpu's own launch options.
OPTIONS = ("backend", "check", "sanitize", "trace", "cores", "disable_passes", "double_buffer", "max_steps")

# triton-ascend's compile and launch options (its NPUOptions and documented autotune options).
# name -> (tritonpu option it sets, or None; why it has no further effect here)
_BISHENG = "a switch of the bisheng compiler's own pipeline, which tritonpu's compiler does not have"
_CV = "tunes cube/vector fusion across the separate AIC and AIV cores; the virtual NPU's AI core runs both pipes"
_SYNC = "tritonpu inserts exactly the flag syncs its dependence analysis needs, on every launch"
ASCEND_OPTIONS: dict[str, tuple[str | None, str]] = {
    "multibuffer": ("double_buffer", "double buffering of the kernel's loads (tritonpu's double_buffer=)"),
    "stream": (None, "the simulator has one in-order stream"),
    "sanitize_overflow": (None, "integer overflow wraps as in Triton; the sanitizer checks memory accesses"),
    "kernel_name": (None, "the kernel keeps its Python name"),
    "cluster_dims": (None, "the virtual NPU has no clusters"),
    "enable_persistent": (None, "tritonpu's persistent pass decides (disable_passes=['persistent'] turns it off)"),
    "optimize_epilogue": (None, _BISHENG),
    "allow_fp8e4nv": (None, "tritonpu has no fp8 types"),
    "allowed_dot_input_precisions": (None, "tl.dot's input_precision= is what decides"),
    "enable_npu_compile": (None, "the kernel is always compiled for the virtual NPU"),
    "max_num_imprecise_acc_default": (None, "dots accumulate in full precision"),
    "extern_libs": (None, "libdevice functions are built in"),
    "num_buffers_warp_spec": (None, "the virtual NPU has no warps"),
    "num_consumer_groups": (None, "the virtual NPU has no warps"),
    "reg_dec_producer": (None, "the virtual NPU has no warps"),
    "reg_inc_consumer": (None, "the virtual NPU has no warps"),
    "warp_size": (None, "the virtual NPU has no warps"),
    "compile_mode": (None, "tritonpu compiles every kernel as SIMD tile code"),
    "force_simt_only": (None, "tritonpu compiles every kernel as SIMD tile code"),
    "force_simt_template": (None, "tritonpu compiles every kernel as SIMD tile code"),
    "simt_stack_limit": (None, "tritonpu compiles every kernel as SIMD tile code"),
    "enable_bishengir_simt_optimization": (None, _BISHENG),
    "enable_simt_reorder_instruction": (None, _BISHENG),
    "shared_mem_dynamic_size": (None, "Unified Buffer use is planned by tritonpu's buffer planner"),
    "compile_on_910_95": (None, "the preset machine is ascend910b"),
    "unit_flag": (None, _SYNC),
    "inject_barrier_all": (None, _SYNC),
    "inject_block_all": (None, _SYNC),
    "disable_auto_inject_block_sync": (None, _SYNC),
    "sync_solver": (None, _SYNC),
    "enable_sync_block_lock": (None, _SYNC),
    "enable_cce_vf_auto_sync": (None, _SYNC),
    "enable_cce_vf_remove_membar": (None, _SYNC),
    "limit_auto_multi_buffer_only_for_local_buffer": (None, "multibuffer= applies to every load tile"),
    "limit_auto_multi_buffer_of_local_buffer": (None, "multibuffer= applies to every load tile"),
    "set_workspace_multibuffer": (None, "kernels have no GM workspace here"),
    "tile_mix_vector_loop": (None, _CV),
    "tile_mix_cube_loop": (None, _CV),
    "enable_hivm_auto_cv_balance": (None, _CV),
    "enable_mixed_cv": (None, _CV),
    "enable_dynamic_cv_pipeline": (None, _CV),
    "enable_auto_bind_sub_block": (None, _CV),
    "auto_tile_and_bind_subblock": (None, _CV),
    "mix_mode": (None, _CV),
    "enable_nd2nz_on_vector": (None, "cube operands are moved into the fractal layout by the L1->L0 transfers"),
    "enable_linearize": (None, _BISHENG),
    "enable_flatten": (None, _BISHENG),
    "enable_drop_unit_dims": (None, _BISHENG),
    "enable_auto_vectorize_v2": (None, _BISHENG),
    "auto_vectorize_v2_max_fused_ops_num": (None, _BISHENG),
    "prevec_max_fused_ops_num": (None, _BISHENG),
    "enable_vf_fusion": (None, _BISHENG),
    "vf_merge_level": (None, _BISHENG),
    "hfusion_enable_multiple_consumer_fusion": (None, _BISHENG),
    "enable_ubuf_saving": (None, _BISHENG),
    "disable_tightly_coupled_buffer_reuse": (None, _BISHENG),
    "disable_size_align_for_cast": (None, _BISHENG),
    "disable_fma": (None, "tritonpu fuses a multiply and an add only where the kernel calls tl.fma"),
    "enable_preload": (None, "double buffering already loads the next tile ahead"),
    "enable_select_analysis": (None, _BISHENG),
    "enable_mask_fallback_conversion": (None, "masked accesses are always lowered to exact transfers or gathers"),
    "optimize_dynamic_offset": (None, "runtime offsets are always analysed for contiguous transfers"),
    "enable_auto_blockify": (None, "tritonpu's persistent pass maps programs onto cores"),
    "auto_blockify_size": (None, "tritonpu's persistent pass maps programs onto cores"),
    "add_auto_scheduling": (None, _BISHENG),
    "bisheng_options": (None, _BISHENG),
    "ir_override": (None, "the kernel is compiled from its source"),
    "use_bytecode": (None, _BISHENG),
    "inter_cache_num": (None, _BISHENG),
    "intra_cache_num": (None, _BISHENG),
    "load_cache_num": (None, _BISHENG),
    "ub_lower_bound_mode": (None, "buffer planning always checks the Unified Buffer exactly"),
    "llvm_version": (None, "the cpu backend uses llvmlite's LLVM"),
}

ALL = frozenset(TRITON_OPTIONS + OPTIONS) | frozenset(ASCEND_OPTIONS)


def resolve(options: dict) -> tuple[dict, list[str]]:
    """``options`` with triton-ascend's options replaced by their tritonpu meaning, and the notes for
    the ones that have none."""
    out, notes = {}, []
    for k, v in options.items():
        if k == "disable_passes":
            v = disabled_passes(v)
        if k == "cores":
            v = core_count(v)
        if k == "max_steps" and v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            from tritonpu.errors import LaunchError
            raise LaunchError(f"max_steps= takes a whole number of instructions >= 1, got {v!r}")
        if k not in ASCEND_OPTIONS:
            out[k] = v
            continue
        target, why = ASCEND_OPTIONS[k]
        if target is not None:
            if target not in options:               # tritonpu's own name wins when both are given
                out[target] = bool(v)
        else:
            notes.append(f"triton-ascend option {k}={v!r} has no effect on the virtual NPU: {why}")
    return out, notes


def core_count(value):
    """``cores=`` checked: None (the preset's) or a whole number >= 1; anything else is a
    ``LaunchError`` naming the option."""
    import numbers

    from tritonpu.errors import LaunchError
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise LaunchError(f"cores= takes a whole number of cores >= 1 (or None: the machine's), got {value!r}")
    return int(value)


def disabled_passes(value) -> tuple:
    """``disable_passes=`` checked: a pass name or a list of them, each one the compiler may leave
    out (``-`` or ``_`` between words); anything else is a ``LaunchError`` (a misspelt name would
    otherwise change nothing, silently)."""
    import difflib

    from tritonpu.codegen.pipeline import OPTIONAL_PASSES
    from tritonpu.errors import LaunchError
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    try:
        names = [str(n).strip().lower().replace("_", "-") for n in names]
    except TypeError:
        raise LaunchError(f"disable_passes= takes a pass name or a list of them, got {value!r}") from None
    for n in names:
        if n not in OPTIONAL_PASSES:
            close = difflib.get_close_matches(n, OPTIONAL_PASSES, n=1)
            raise LaunchError(f"disable_passes: {n!r} is not a pass that can be left out"
                              + (f" (did you mean {close[0]!r}?)" if close else "")
                              + f"; choose from {', '.join(OPTIONAL_PASSES)}")
    return tuple(names)

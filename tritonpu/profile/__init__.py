"""The profile a user can see and act on, built from a traced launch's ``Stats``.

The simulator keeps per-instruction records of a traced launch (``npu.state.Records``: bytes
and DDR/L2 beats per transfer, stall cycles per wait, on-chip high-water marks).  One module per
concept: :mod:`.model` (the trace as data: per line, per core, who stalled whom),
:mod:`.source` (the source-line profile), :mod:`.advice` (the bottleneck report),
:mod:`.html` (the self-contained HTML report), :mod:`.plot` (matplotlib timeline, the ``plot``
extra), :mod:`.csvs` (msprof-style CSV files) and :mod:`.progress` (tqdm bars, the ``progress``
extra).  ``Stats`` delegates to them: ``source_profile()``, ``advice()``, ``write_html()``,
``plot_timeline()``, ``write_csv()``.
"""

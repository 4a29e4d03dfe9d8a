"""Host-side helpers with Triton's names (``triton.tools``)."""

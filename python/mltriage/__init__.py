"""mltriage: triage a misbehaving ML training run from its artifacts.

The ``mltriage`` command is the Rust binary installed beside this package; this package holds
:mod:`mltriage.capture`, the training hooks that write the evidence mltriage's probes read.
"""

__all__ = ["capture"]

"""Timing benchmarks (ratios measured side by side in one run, never asserted in tests), the
device check, the accelerator plan and the compile report. Run from the repository root,
``python -m benchmarks.<name>``; the reports they commit are in ``results/``."""

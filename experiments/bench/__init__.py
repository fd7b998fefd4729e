"""Benchmarks that print ratios side by side (kernels, throughput); never asserted in tests."""

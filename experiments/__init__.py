"""Entry points, experiment configs, the reproduce harness and benchmarks."""

"""Discrete Schrödinger-bridge benchmark (CatSBench) in JAX.

Benchmark pairs (p_0, p_1) on {0..S-1}^D whose Schrödinger-bridge / entropic-OT solution is known in
closed form (a rank-K CP Schrödinger potential under an independent-coordinate reference process),
with exact plan log-densities, samplers, the Markov SB chain and the benchmark's metrics.

Modules: ``reference`` (reference processes and bridges), ``benchmark`` (the CP potential, closed
forms, the ``Benchmark`` pytree and the presets), ``metrics`` (shape / trend, conditional scores,
SB perplexity, trajectory KLs, exact enumeration metrics, trivial baselines).

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348). Reference PyTorch code: github.com/gregkseno/catsbench.
"""

from iclr26_jax.dsb.benchmark import (
  BASE_STEPS,
  HD_PRESETS,
  IMAGE_PRESETS,
  PRESETS,
  Benchmark,
  CPPotential,
  build_benchmark,
  make_benchmark,
  make_preset,
)
from iclr26_jax.dsb.reference import ReferenceProcess, make_reference, reference_from_log_matrix

__all__ = [
  "BASE_STEPS",
  "HD_PRESETS",
  "IMAGE_PRESETS",
  "PRESETS",
  "Benchmark",
  "CPPotential",
  "ReferenceProcess",
  "build_benchmark",
  "make_benchmark",
  "make_preset",
  "make_reference",
  "reference_from_log_matrix",
]

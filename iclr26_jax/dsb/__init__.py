"""Discrete Schrödinger-bridge benchmark (CatSBench) in JAX.

Benchmark pairs (p_0, p_1) on {0..S-1}^D with a closed-form Schrödinger-bridge / entropic-OT
solution, and the benchmark's metrics for any sampler ``sample_fn(key, x0) -> x1``: ``Benchmark``
(``Benchmark.from_preset(name)``, ``name in PRESETS``), ``evaluate``, ``reference_scores`` and
``METRIC_DIRECTIONS``; the solvers (``DLightSB``, ``DLightSBM``, ``CSBM``, ``AlphaCSBM`` and their
configs) and ``Model`` / ``evaluate_model`` / ``prepare_preset`` load on first use.

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348). Reference PyTorch code: github.com/gregkseno/catsbench.
The algorithm, its equations and reference hyperparameters: docs/methods/dsb.md ("The algorithm").
"""

from iclr26_jax._lazy import lazy_exports
from iclr26_jax.dsb.benchmark import (
  BASE_STEPS,
  DEPRECATED_PRESET_NAMES,
  HD_PRESETS,
  IMAGE_PRESETS,
  PRESETS,
  Benchmark,
  CPPotential,
  build_benchmark,
  make_benchmark,
  make_preset,
  resolve_preset,
)
from iclr26_jax.dsb.reference import ReferenceProcess, make_reference, reference_from_log_matrix

_EXPORTS = {
  "evaluate": "evaluation",
  "reference_scores": "evaluation",
  "Scores": "evaluation",
  "METRIC_DIRECTIONS": "evaluation",
  "Model": "evaluation",
  "evaluate_model": "evaluation",
  "prepare_preset": "evaluation",
  "SOLVERS": "evaluation",
  "DLightSB": "solvers",
  "DLightSBConfig": "solvers",
  "DLightSBM": "solvers",
  "DLightSBMConfig": "solvers",
  "CSBM": "solvers",
  "CSBMConfig": "solvers",
  "AlphaCSBM": "solvers",
  "AlphaCSBMConfig": "solvers",
  "DataProblem": "solvers",
}

__all__ = [
  "BASE_STEPS",
  "DEPRECATED_PRESET_NAMES",
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
  "resolve_preset",
  "evaluate",
  "reference_scores",
  "Scores",
  "METRIC_DIRECTIONS",
  "Model",
  "evaluate_model",
  "prepare_preset",
  "SOLVERS",
  "DLightSB",
  "DLightSBConfig",
  "DLightSBM",
  "DLightSBMConfig",
  "CSBM",
  "CSBMConfig",
  "AlphaCSBM",
  "AlphaCSBMConfig",
  "DataProblem",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

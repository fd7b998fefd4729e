"""Discrete Schrödinger-bridge benchmark (CatSBench) in JAX.

Benchmark pairs (p_0, p_1) on {0..S-1}^D whose Schrödinger-bridge / entropic-OT solution is known in
closed form (a rank-K CP Schrödinger potential under an independent-coordinate reference process),
with exact plan log-densities, samplers, the Markov SB chain and the benchmark's metrics.

Entry point: ``Benchmark.from_preset(name)`` (``name in PRESETS``), ``bench.sample_source(key, n)``,
``bench.sample_solution(key, x0)`` (the analytic plan's conditional) and ``evaluate(bench,
sample_fn, key=...)`` scoring any sampler ``sample_fn(key, x0) -> x1`` with the benchmark's metrics;
``reference_scores`` (or ``evaluate(..., references=True)``) gives the same metrics for the truth,
the identity map and the independent coupling, the scale to read a sampler's scores on
(``METRIC_DIRECTIONS`` says which way each metric is better).
The solvers (``DLightSB``, ``DLightSBM``, ``CSBM``, ``AlphaCSBM`` and their configs, catsbench's
defaults) and the evaluation's ``Model`` / ``evaluate_model`` / ``prepare_preset`` load on first use.

Modules: ``reference`` (reference processes and bridges), ``benchmark`` (the CP potential, closed
forms, the ``Benchmark`` pytree and the presets), ``metrics`` (shape / trend, conditional scores,
SB perplexity, trajectory KLs, exact enumeration metrics, trivial baselines).

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348). Reference PyTorch code: github.com/gregkseno/catsbench.
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

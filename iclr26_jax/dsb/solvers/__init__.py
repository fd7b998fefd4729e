"""Solvers for the discrete Schrödinger-bridge benchmark (CatSBench).

``dlightsb`` (DLightSB: a learned CP Schrödinger potential, unpaired KL objective), ``dlightsb_m``
(DLightSB-M: the same potential bridge-matched to a coupling; per-coordinate KL / MSE or the exact
joint-transition loss), ``csbm`` (CSBM: a D3PM-style endpoint-prediction network, alternating
two-direction discrete-time IMF) and ``alpha_csbm`` (alpha-CSBM: both directions every step).

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench.
"""

from iclr26_jax.dsb.solvers.alpha_csbm import AlphaCSBM, AlphaCSBMConfig
from iclr26_jax.dsb.solvers.csbm import CSBM, CSBMConfig, CSBMOutput
from iclr26_jax.dsb.solvers.dlightsb import (
  DataProblem,
  DLightSB,
  DLightSBConfig,
  DLightSBOutput,
  dlightsb_loss,
  init_potential,
)
from iclr26_jax.dsb.solvers.dlightsb_m import DLightSBM, DLightSBMConfig, dlightsb_m_loss

__all__ = [
  "AlphaCSBM",
  "AlphaCSBMConfig",
  "CSBM",
  "CSBMConfig",
  "CSBMOutput",
  "DataProblem",
  "DLightSB",
  "DLightSBConfig",
  "DLightSBOutput",
  "DLightSBM",
  "DLightSBMConfig",
  "dlightsb_loss",
  "dlightsb_m_loss",
  "init_potential",
]

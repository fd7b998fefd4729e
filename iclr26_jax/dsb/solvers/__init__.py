"""Solvers for the discrete Schrödinger-bridge benchmark (CatSBench).

* ``dlightsb``: DLightSB, a learned CP (mixture-of-products) Schrödinger potential trained on
  unpaired samples with the KL objective;
* ``dlightsb_m``: DLightSB-M, the same potential bridge-matched to a given coupling, with the
  reference per-coordinate KL / MSE losses and the exact joint-transition objective;
* ``csbm``: CSBM, a D3PM-style endpoint-prediction network trained by alternating two-direction
  discrete-time IMF;
* ``alpha_csbm``: alpha-CSBM, both directions trained in every step (online IMF).

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

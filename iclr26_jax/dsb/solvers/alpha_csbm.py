"""alpha-CSBM: online CSBM, both directions trained in every step.

CSBM's network, Eq. 14 transition, loss and sampler (``csbm.py``); every step trains both
directions on the two halves of the batch with one AdamW optimiser and a per-direction EMA, on the
independent coupling for the first ``num_first_iterations`` epochs, then each on the other
direction's EMA rollout from a real half-batch (online IMF). The phase is a function of the step
counter, so a resumed run reproduces an uninterrupted one.

Paper: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the Era
of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal Transport",
ICLR 2026 (arXiv 2509.23348), §"alpha-CSBM"; reference PyTorch code github.com/gregkseno/catsbench.
Background: alpha-DSBM / online IMF (De Bortoli et al., 2024), CSBM (Ksenofontov & Korotin, 2025).
The schedule and reference hyperparameters: docs/methods/dsb.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from iclr26_jax.core import optim as core_optim
from iclr26_jax.core import sharding as shd
from iclr26_jax.core.train_state import TrainState
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.dsb.solvers import dlightsb as dls
from iclr26_jax.dsb.solvers.csbm import CSBM, CSBMConfig

__all__ = ["AlphaCSBMConfig", "AlphaCSBM", "alpha_csbm_train_step"]


@dataclasses.dataclass(frozen=True)
class AlphaCSBMConfig(CSBMConfig):
  """Hyperparameters of alpha-CSBM: those of ``CSBMConfig`` with the paper's alpha-CSBM defaults.

  Differences in meaning: ``num_first_iterations`` counts *epochs* of phase 1 (3), after which
  phase 2 runs to ``train_steps`` (7 epochs x 20k = 140k in total); ``batch_size`` (128) is
  split into two halves, one per direction, so it must be even; ``learning_rate`` is 1e-3.
  """

  train_steps: int = 140_000
  learning_rate: float = 1e-3

  def validate(self) -> None:
    """Raises ValueError naming the first bad field."""
    super().validate()
    if self.batch_size % 2:
      raise ValueError(f"batch_size must be even (one half per direction), got {self.batch_size}")


def alpha_csbm_train_step(
  state: TrainState, problem: Any, cfg: AlphaCSBMConfig
) -> tuple[TrainState, dict[str, jax.Array]]:
  """One alpha-CSBM step: both directions, one AdamW update over both networks, both EMAs.

  Args:
    state: TrainState from ``csbm.init_state(..., joint_optimizer=True)``.
    problem: Benchmark or DataProblem.
    cfg: AlphaCSBMConfig (static).

  Returns:
    (new state, metrics ``train/loss`` (sum of both), ``train/loss_forward``,
    ``train/loss_backward``, ``train/grad_norm``, ``train/imf``).
  """
  net = csbm.network(problem, cfg)
  refs = csbm._directions(problem)
  half = cfg.batch_size // 2
  imf = state.step >= cfg.num_first_iterations * cfg.epoch_steps
  k_src, k_tgt, k_rf, k_rb, k_lf, k_lb = jax.random.split(state.step_key(), 6)
  x0 = dls._draw_source(problem, k_src, half)
  y = dls._draw_target(problem, k_tgt, half)
  # Data parallel under the trainer's ``rows_mesh``: each half's rows, the rollouts from them and
  # the losses are split over ``data`` (a half not divisible by the axis size stays replicated).
  x0, y = shd.shard_rows((x0, y))
  ema = state.extras["ema"]
  start_f = csbm.coupling_start(
    net, ema["backward"], refs["backward"], k_rf, y, x0, imf, cfg.chunk_elements
  )
  start_b = csbm.coupling_start(
    net, ema["forward"], refs["forward"], k_rb, x0, y, imf, cfg.chunk_elements
  )
  start_f, start_b = shd.shard_rows((start_f, start_b))

  def loss_fn(params):
    lf, info_f = csbm.direction_loss(net, params["forward"], refs["forward"], start_f, y, k_lf, cfg)
    lb, info_b = csbm.direction_loss(
      net, params["backward"], refs["backward"], start_b, x0, k_lb, cfg
    )
    entropy = 0.5 * (info_f["train/target_entropy"] + info_b["train/target_entropy"])
    return lf + lb, {
      "train/loss_forward": lf,
      "train/loss_backward": lb,
      "train/target_entropy": entropy,
    }

  (loss, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
  state, gnorm = state.apply_gradients(grads)
  # torch_ema warm-up (as in CSBM): both EMAs are updated every step, state.step is now n.
  new_ema = core_optim.ema_update(ema, state.params, cfg.ema_decay, count=state.step)
  state = state.replace(extras={**state.extras, "ema": new_ema})
  return state, {
    "train/loss": loss,
    "train/grad_norm": gnorm,
    **info,
    "train/imf": imf.astype(jnp.float32),
  }


class AlphaCSBM(CSBM):
  """alpha-CSBM solver: configure once, then ``solve(problem, rng)`` (returns ``CSBMOutput``).

  Usage (a sketch, not a doctest)::

    out = AlphaCSBM(AlphaCSBMConfig(train_steps=3000, epoch_steps=1000,
                                    num_first_iterations=1, steps_per_chunk=500)).solve(
        benchmark, jax.random.key(0))
  """

  step_fn = staticmethod(alpha_csbm_train_step)
  joint_optimizer = True
  config_class = AlphaCSBMConfig

"""FQL one-step policy loss (Park, Li, Levine, "Flow Q-Learning", ICML 2025,
github.com/seohongpark/fql), used by the FQL baseline (teacher = behaviour flow) and by QAM-F
(teacher = the QAM flow v_θ). The BC-flow baseline is QAM with λ = 0: it trains only
the flow-matching loss and samples v_β (see ``agent.py``).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp


def one_step_policy_loss(
  policy: Callable[[jax.Array, jax.Array], jax.Array],
  q_fn: Callable[[jax.Array, jax.Array], jax.Array],
  obs: jax.Array,
  z: jax.Array,
  teacher_actions: jax.Array,
  alpha: float,
):
  """L = −mean_j Q_j(s, clip(μ(s, z))) + α·‖μ(s, z) − teacher(s, z)‖² (mean over batch).

  Args:
    policy: μ(obs, z) -> ``(B, D)`` (carries the gradient).
    q_fn: critic ensemble ``(obs, a) -> (K, B)``; pass stop-gradient parameters so that only
      the policy is trained by this loss.
    obs: ``(B, S)``; z: ``(B, D)`` noise shared by student and teacher.
    teacher_actions: ``(B, D)`` ODE_N(teacher; s, z), unclipped (held constant).
    alpha: distillation coefficient α.
  Returns:
    (loss, info) with ``q_loss`` (= −mean Q) and ``distill_loss`` (squared distance summed over
    action dims, mean over batch).
  """
  if z.shape != teacher_actions.shape or z.ndim != 2 or obs.shape[0] != z.shape[0]:
    raise ValueError(
      f"obs (B, S), z and teacher_actions (B, D) required; got {obs.shape}, "
      f"{z.shape}, {teacher_actions.shape}"
    )
  mu = policy(obs, z)
  q = jnp.mean(q_fn(obs, jnp.clip(mu, -1.0, 1.0)), axis=0)
  distill = jnp.mean(jnp.sum(jnp.square(mu - jax.lax.stop_gradient(teacher_actions)), axis=-1))
  q_loss = -jnp.mean(q)
  return q_loss + alpha * distill, {"q_loss": q_loss, "distill_loss": distill}

"""QAM-E, the EXPO-style edit policy (QAM-F's one-step loss is FQL's, in ``baselines.py``).

QAM-E (Li & Levine, "Q-learning with Adjoint Matching", ICLR 2026; reference code
github.com/ColinQiyangLi/qam): a tanh-Gaussian edit e ~ g_ψ(· | s, a_flow) on top of the clipped
flow sample, â = clip(a_flow + η·e, −1, 1), maximising the critic with an auto-tuned entropy
bonus. The variants: docs/methods/qam.md ("Variants and baselines").
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp


def edit_actions(edit_dist, obs: jax.Array, a_flow: jax.Array, key: jax.Array, edit_scale: float):
  """Samples an edit and applies it.

  Args:
    edit_dist: ``edit_dist(obs, a_flow)`` -> a distribution with event shape ``(D,)``.
    obs: ``(B, S)``; a_flow: ``(B, D)`` clipped flow actions (held constant).
    key: PRNG key of the edit sample.
    edit_scale: η.
  Returns:
    (â ``(B, D)`` in [−1, 1], log g_ψ(e | s, a_flow) ``(B,)``).
  """
  message = f"obs (B, S) and a_flow (B, D) required; got {obs.shape}, {a_flow.shape}"
  chex.assert_rank([obs, a_flow], 2, exception_type=ValueError, custom_message=message)
  chex.assert_equal_shape_prefix(
    [obs, a_flow], 1, exception_type=ValueError, custom_message=message
  )
  e, log_prob = edit_dist(obs, a_flow).sample_and_log_prob(seed=key)
  return jnp.clip(a_flow + edit_scale * e, -1.0, 1.0), log_prob


def edit_policy_loss(
  edit_dist,
  q_fn: Callable[[jax.Array, jax.Array], jax.Array],
  obs: jax.Array,
  a_flow: jax.Array,
  key: jax.Array,
  edit_scale: float,
  log_temp: jax.Array,
  target_entropy: float,
):
  """L_E(ψ) + L_α(log α_e).

  L_E = mean_B[−mean_j Q_j(s, â) + sg(α_e)·log g_ψ(e | s, a_flow)] (reparameterised e), and the
  temperature loss L_α = α_e·sg(H − H_target) with H = −mean_B log g_ψ, α_e = exp(log α_e): its
  gradient lowers α_e when the entropy is above target and raises it when below.

  Args:
    edit_dist: the edit policy (carries ψ's gradient).
    q_fn: critic ensemble ``(obs, a) -> (K, B)``; pass stop-gradient parameters.
    obs: ``(B, S)``; a_flow: ``(B, D)`` (constant); key: PRNG key.
    edit_scale: η; log_temp: scalar log α_e; target_entropy: H_target (total over D).
  Returns:
    (loss, info) with ``q_loss``, ``entropy``, ``temp`` and ``temp_loss``.
  """
  a_flow = jax.lax.stop_gradient(a_flow)
  a_hat, log_prob = edit_actions(edit_dist, obs, a_flow, key, edit_scale)
  q = jnp.mean(q_fn(obs, a_hat), axis=0)
  temp = jnp.exp(log_temp)
  actor_loss = jnp.mean(-q + jax.lax.stop_gradient(temp) * log_prob)
  entropy = -jnp.mean(log_prob)
  temp_loss = temp * jax.lax.stop_gradient(entropy - target_entropy)
  return actor_loss + temp_loss, {
    "loss": actor_loss,
    "q_loss": -jnp.mean(q),
    "entropy": entropy,
    "temp": temp,
    "temp_loss": temp_loss,
  }

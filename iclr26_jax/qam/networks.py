"""Flax Linen networks of the QAM package: flow velocity MLPs and the critic ensemble.

The MLP's layer stack is the shared ``iclr26_jax.nn.mlp`` (GELU, Xavier-uniform, optional
LayerNorm) under this package's bf16 matmul policy ``dense``; the vmapped critic ensemble is QAM's.
"""

from __future__ import annotations

import functools
from typing import Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from iclr26_jax.nn import mlp


COMPUTE_DTYPES = ("float32", "bfloat16")


def _bf16_operands(inputs, kernel, bias, dtype=None):
  """Dense's ``promote_dtype`` for the bf16 policy: matmul operands in bf16, the bias kept f32."""
  del dtype
  return inputs.astype(jnp.bfloat16), kernel.astype(jnp.bfloat16), bias


def dense(features: int, compute_dtype: str = "float32", **kw) -> nn.Dense:
  """``nn.Dense`` under a mixed-precision policy; parameters are float32 either way.

  ``"float32"``: the plain f32 layer. ``"bfloat16"``: inputs and kernel are rounded to bf16 for
  the matmul, which accumulates and returns float32 (``preferred_element_type``); the f32 bias
  is added in f32, and everything between matmuls (GELU, LayerNorm, losses) stays f32. Since a
  product of two bf16 numbers is exact in f32, the layer equals an f32 matmul of the rounded
  operands up to the order of the f32 summation.
  """
  if compute_dtype == "float32":
    return nn.Dense(features, **kw)
  if compute_dtype == "bfloat16":
    return nn.Dense(
      features,
      param_dtype=jnp.float32,
      promote_dtype=_bf16_operands,
      dot_general=functools.partial(jax.lax.dot_general, preferred_element_type=jnp.float32),
      **kw,
    )
  raise ValueError(f"compute_dtype must be one of {COMPUTE_DTYPES}; got {compute_dtype!r}")


class MLP(nn.Module):
  """``(..., F) -> (..., out_dim)``: Dense → GELU (→ LayerNorm) per hidden layer, Xavier-uniform.

  ``compute_dtype`` is the matmul policy of ``dense`` (f32 parameters and activations always).
  """

  hidden_dims: Sequence[int]
  out_dim: int
  layer_norm: bool = False
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    return mlp(
      x,
      self.hidden_dims,
      self.out_dim,
      activation=nn.gelu,
      layer_norm=self.layer_norm,
      kernel_init=nn.initializers.xavier_uniform(),
      dense=functools.partial(dense, compute_dtype=self.compute_dtype),
    )


class VelocityField(nn.Module):
  """Flow velocity v(s, x, t): obs ``(B, S)``, x ``(B, D)``, t ``(B,)`` -> ``(B, D)``.

  MLP on concat[s, x, t] with the raw scalar t (no Fourier features), no LayerNorm.
  """

  hidden_dims: Sequence[int]
  action_dim: int
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, obs, x, t):
    inp = jnp.concatenate([obs, x, t[..., None]], axis=-1)
    return MLP(self.hidden_dims, self.action_dim, compute_dtype=self.compute_dtype)(inp)


class OneStepPolicy(nn.Module):
  """FQL one-step policy μ(s, z): obs ``(B, S)``, z ``(B, D)`` -> ``(B, D)`` (unclipped)."""

  hidden_dims: Sequence[int]
  action_dim: int
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, obs, z):
    return MLP(self.hidden_dims, self.action_dim, compute_dtype=self.compute_dtype)(
      jnp.concatenate([obs, z], axis=-1)
    )


class EditPolicy(nn.Module):
  """QAM-E edit policy g_ψ(e | s, a) (EXPO-style): a tanh-Gaussian on (−1, 1)^D.

  obs ``(B, S)``, a_flow ``(B, D)`` -> a ``distrax`` distribution with event shape ``(D,)``:
  MLP on concat[s, a_flow] giving the mean and a state-dependent log-std clipped to
  [log_std_min, log_std_max], a diagonal Gaussian pushed through tanh.
  """

  hidden_dims: Sequence[int]
  action_dim: int
  log_std_min: float = -20.0
  log_std_max: float = 2.0
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, obs, a_flow):
    out = MLP(self.hidden_dims, 2 * self.action_dim, compute_dtype=self.compute_dtype)(
      jnp.concatenate([obs, a_flow], axis=-1)
    )
    mean, log_std = jnp.split(out, 2, axis=-1)
    log_std = jnp.clip(log_std, self.log_std_min, self.log_std_max)
    base = distrax.MultivariateNormalDiag(loc=mean, scale_diag=jnp.exp(log_std))
    return distrax.Transformed(base, distrax.Block(distrax.Tanh(), ndims=1))


class _Critic(nn.Module):
  hidden_dims: Sequence[int]
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, obs, actions):
    x = jnp.concatenate([obs, actions], axis=-1)
    return MLP(self.hidden_dims, 1, layer_norm=True, compute_dtype=self.compute_dtype)(x)[..., 0]


class CriticEnsemble(nn.Module):
  """K critics in one vmapped module: obs ``(B, S)``, actions ``(B, D)`` -> ``(K, B)``.

  One parameter tree with a leading K axis; each member is an MLP with LayerNorm after every
  hidden layer, on concat[s, a].
  """

  hidden_dims: Sequence[int]
  num_qs: int
  compute_dtype: str = "float32"

  @nn.compact
  def __call__(self, obs, actions):
    ens = nn.vmap(
      _Critic,
      variable_axes={"params": 0},
      split_rngs={"params": True},
      in_axes=None,
      out_axes=0,
      axis_size=self.num_qs,
    )
    return ens(self.hidden_dims, self.compute_dtype)(obs, actions)


def critic_member(hidden_dims: Sequence[int], compute_dtype: str = "float32"):
  """``apply(member_params, obs (B, S), actions (B, D)) -> (B,)``: one member of a
  ``CriticEnsemble`` (the same module the ensemble vmaps), for loops over the members."""
  net = _Critic(tuple(hidden_dims), compute_dtype)
  return lambda p, obs, actions: net.apply({"params": p}, obs, actions)

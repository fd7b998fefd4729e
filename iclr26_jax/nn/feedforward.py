"""Multi-layer perceptrons: ``mlp`` (layers in the caller's scope) and the ``MLP`` module.

``mlp(x, hidden_dims, out_dim, activation=...)`` is ``Dense → activation (→ LayerNorm)`` per
hidden width, then a final ``Dense(out_dim)`` with no activation. It is a function, not a module:
called inside a Flax ``@nn.compact`` method, it creates its ``nn.Dense`` (and ``nn.LayerNorm``)
layers as children of the CALLING module, so they get the caller's automatic names
(``Dense_0, Dense_1, ..., LayerNorm_0, ...``) or the explicit ``names``, exactly as an inline
loop of ``nn.Dense`` calls would. Flax derives every layer's init key from its path, so replacing
such a loop by ``mlp`` leaves the parameter tree, the init values and old checkpoints unchanged.
``MLP`` wraps it as a module for a caller that wants one more level (``MLP_0/Dense_0``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import chex
import flax.linen as nn
import jax

__all__ = ["mlp", "MLP"]

Initializer = Callable[..., Any]


def _init_kwargs(kernel_init: Initializer | None, bias_init: Initializer | None) -> dict:
  """The Dense keyword arguments for the inits that are set (None keeps the layer's default)."""
  kw = {}
  if kernel_init is not None:
    kw["kernel_init"] = kernel_init
  if bias_init is not None:
    kw["bias_init"] = bias_init
  return kw


def mlp(
  x: jax.Array,
  hidden_dims: Sequence[int],
  out_dim: int,
  *,
  activation: Callable[[jax.Array], jax.Array],
  layer_norm: bool = False,
  kernel_init: Initializer | None = None,
  bias_init: Initializer | None = None,
  out_kernel_init: Initializer | None = None,
  out_bias_init: Initializer | None = None,
  dense: Callable[..., nn.Module] = nn.Dense,
  names: Sequence[str] | None = None,
) -> jax.Array:
  """``(..., F) -> (..., out_dim)``: per hidden width ``Dense → activation (→ LayerNorm)``, then
  ``Dense(out_dim)``. Call it inside a Flax ``@nn.compact`` method; the layers belong to that
  module.

  Args:
    x: ``(..., F)`` input; the Dense layers act on the last axis.
    hidden_dims: widths of the hidden layers, possibly empty (then one Dense ``F -> out_dim``).
    out_dim: width of the output layer (no activation after it).
    activation: applied after every hidden Dense (e.g. ``nn.relu``, ``nn.gelu``, ``nn.silu``).
    layer_norm: a default ``nn.LayerNorm`` after every hidden activation (auto-named
      ``LayerNorm_i`` in the caller's scope).
    kernel_init, bias_init: inits of the hidden Dense layers (None: the ``dense`` default).
    out_kernel_init, out_bias_init: inits of the output Dense (None: ``kernel_init`` /
      ``bias_init``; e.g. ``nn.initializers.zeros`` for a zero output at init).
    dense: ``dense(features, **init_kwargs) -> module`` building each layer; ``nn.Dense`` or a
      factory with a dtype policy (``functools.partial(nn.Dense, use_bias=False)``, ...).
    names: ``len(hidden_dims) + 1`` explicit layer names (hidden layers, then the output); None
      keeps the caller's automatic names.

  Returns:
    ``(..., out_dim)``.
  """
  hidden_dims = tuple(hidden_dims)
  chex.assert_shape(
    x,
    (..., None),
    exception_type=ValueError,
    custom_message=f"x must have a feature axis (..., F); got shape {tuple(x.shape)}",
  )
  for width in (*hidden_dims, out_dim):
    if int(width) != width or width < 1:
      raise ValueError(
        f"layer widths must be positive integers; got hidden_dims={hidden_dims}, out_dim={out_dim}"
      )
  if names is not None and len(names) != len(hidden_dims) + 1:
    raise ValueError(
      f"names must give len(hidden_dims) + 1 = {len(hidden_dims) + 1} layer names; "
      f"got {tuple(names)}"
    )
  named = (lambda i: {"name": names[i]}) if names is not None else (lambda i: {})
  hidden_kw = _init_kwargs(kernel_init, bias_init)
  for i, width in enumerate(hidden_dims):
    x = activation(dense(int(width), **hidden_kw, **named(i))(x))
    if layer_norm:
      x = nn.LayerNorm()(x)
  out_kw = _init_kwargs(
    kernel_init if out_kernel_init is None else out_kernel_init,
    bias_init if out_bias_init is None else out_bias_init,
  )
  return dense(int(out_dim), **out_kw, **named(len(hidden_dims)))(x)


class MLP(nn.Module):
  """``(..., F) -> (..., out_dim)``: ``mlp`` as a module (its layers live under this module).

  Attributes: those of ``mlp`` (``hidden_dims``, ``out_dim``, ``activation``, ``layer_norm``, the
  inits, the ``dense`` factory and the layer ``names``).
  """

  hidden_dims: Sequence[int]
  out_dim: int
  activation: Callable[[jax.Array], jax.Array]
  layer_norm: bool = False
  kernel_init: Initializer | None = None
  bias_init: Initializer | None = None
  out_kernel_init: Initializer | None = None
  out_bias_init: Initializer | None = None
  dense: Callable[..., nn.Module] = nn.Dense
  names: Sequence[str] | None = None

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    """x: ``(..., F)`` -> ``(..., out_dim)``."""
    return mlp(
      x,
      self.hidden_dims,
      self.out_dim,
      activation=self.activation,
      layer_norm=self.layer_norm,
      kernel_init=self.kernel_init,
      bias_init=self.bias_init,
      out_kernel_init=self.out_kernel_init,
      out_bias_init=self.out_bias_init,
      dense=self.dense,
      names=self.names,
    )

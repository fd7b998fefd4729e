"""lmKAN networks and same-shape baselines (Flax Linen).

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). Holds
`LMKANNet` ([BatchNorm(no scale, no bias) → LMKANDense] per layer, no activations), `LMKANConv`
(BatchNorm → im2col patches in (kh, kw, C) order, `patches_kkc` → LMKANDense at every position; this
pairing order is part of the model definition, the project's choice since the paper's construction
is not public), `LMKANCNN` / `CNN` ([conv → (ReLU) → pool]* → flatten → dense stack), `MLP` (the
ReLU baseline of an `LMKANNet`'s widths) and `make_network`.

BatchNorm uses PyTorch's default statistics settings (momentum 0.1 ↔ Flax `momentum=0.9`, eps 1e-5);
the `batch_stats` collection must be threaded by the caller (`mutable=["batch_stats"]` when
`train=True`). Architectures: docs/methods/lmkan.md ("The algorithm").
"""

from __future__ import annotations

from typing import Any, Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from iclr26_jax.lmkan.layer import DEFAULT_INIT, LMKANDense

__all__ = ["LMKANNet", "MLP", "LMKANConv", "LMKANCNN", "CNN", "make_network", "patches_kkc"]

_POOLS = ("max", "avg", "none")


def _check_widths(widths, name="widths"):
  widths = tuple(widths)
  if not widths or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in widths):
    raise ValueError(f"{name} must be a non-empty sequence of positive ints, got {widths!r}.")
  return widths


def _pair(v, name):
  if isinstance(v, int) and not isinstance(v, bool):
    v = (v, v)
  v = tuple(v)
  if len(v) != 2 or any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in v):
    raise ValueError(f"{name} must be a positive int or a pair of positive ints, got {v!r}.")
  return v


def _check_nhwc(x):
  chex.assert_rank(
    x,
    4,
    exception_type=ValueError,
    custom_message=(f"x must have shape (N, H, W, C), got {tuple(x.shape)}."),
  )


def _dense_kw(m):
  """The LMKANDense options a network module `m` forwards to every layer."""
  return dict(
    grid_size=m.grid_size,
    table_init=m.table_init,
    init_scale=m.init_scale,
    impl=m.impl,
    dtype=m.dtype,
    param_dtype=m.param_dtype,
  )


def _bn(train, momentum, epsilon, name=None, dtype=None):
  # Flax computes the batch statistics in at least float32 whatever `dtype` is.
  return nn.BatchNorm(
    use_running_average=not train,
    momentum=momentum,
    epsilon=epsilon,
    use_scale=False,
    use_bias=False,
    dtype=dtype,
    name=name,
  )


def _pool(x, pool, window):
  if pool == "max":
    return nn.max_pool(x, (window, window), strides=(window, window))
  if pool == "avg":
    return nn.avg_pool(x, (window, window), strides=(window, window))
  return x


def patches_kkc(x, kernel_size, strides=(1, 1), padding="SAME"):
  """im2col with patch vectors in (kh, kw, C) order (channel-minor).

  Args:
    x: (N, H, W, C).
    kernel_size: (kh, kw).
    strides: (sh, sw).
    padding: "SAME", "VALID" or ((top, bottom), (left, right)), as in `lax.conv_general_dilated`.
  Returns:
    (N, H', W', kh·kw·C), element [..., (a·kw + b)·C + c] = x[n, h'·sh + a − pad, w'·sw + b − pad, c].
  """
  _check_nhwc(x)
  kh, kw = _pair(kernel_size, "kernel_size")
  strides = _pair(strides, "strides")
  c = x.shape[-1]
  p = jax.lax.conv_general_dilated_patches(
    x,
    filter_shape=(kh, kw),
    window_strides=strides,
    padding=padding,
    dimension_numbers=("NHWC", "HWIO", "NHWC"),
    precision=jax.lax.Precision.HIGHEST,
  )
  # `conv_general_dilated_patches` orders the feature axis channel-major: (C, kh, kw). Reorder.
  n, ho, wo, _ = p.shape
  p = p.reshape(n, ho, wo, c, kh * kw).swapaxes(-1, -2)
  return p.reshape(n, ho, wo, kh * kw * c)


class LMKANNet(nn.Module):
  """Stack of [BatchNorm(use_scale=False, use_bias=False) → LMKANDense], no activations.

  Input (B, N_in) (or (..., N_in)); output (..., widths[-1]).

  Attributes:
    widths: output width of every layer (the input width comes from the data), e.g. (h, h, 1).
    grid_size, table_init, init_scale, impl, dtype, param_dtype: forwarded to every LMKANDense
      (`dtype` also to the BatchNorms).
    bn_momentum: Flax momentum (0.9 = PyTorch's 0.1). bn_epsilon: 1e-5 as in PyTorch.
  """

  widths: Sequence[int]
  grid_size: int = 8
  table_init: str = DEFAULT_INIT
  init_scale: float = 0.1
  impl: str = "auto"
  dtype: Any = None
  param_dtype: Any = jnp.float32
  bn_momentum: float = 0.9
  bn_epsilon: float = 1e-5

  @nn.compact
  def __call__(self, x, train: bool = False):
    """x: (..., N_in) → (..., widths[-1]); `train` selects batch statistics (and updates them)."""
    widths = _check_widths(self.widths)
    for i, w in enumerate(widths):
      x = _bn(train, self.bn_momentum, self.bn_epsilon, name=f"bn_{i}", dtype=self.dtype)(x)
      x = LMKANDense(w, name=f"lmkan_{i}", **_dense_kw(self))(x)
    return x


class MLP(nn.Module):
  """ReLU MLP baseline with the same widths as an `LMKANNet`: Dense → ReLU → … → Dense.

  Attributes:
    widths: output width of every layer, e.g. (H, H, 1).
    use_bias: Dense biases (excluded from the FLOP count by convention).
    use_batch_norm: put BatchNorm(no affine) before every Dense, like `LMKANNet` (off by default).
    dtype, param_dtype: as in `flax.linen.Dense`.
  """

  widths: Sequence[int]
  use_bias: bool = True
  use_batch_norm: bool = False
  dtype: Any = None
  param_dtype: Any = jnp.float32
  bn_momentum: float = 0.9
  bn_epsilon: float = 1e-5

  @nn.compact
  def __call__(self, x, train: bool = False):
    """x: (..., N_in) → (..., widths[-1])."""
    widths = _check_widths(self.widths)
    for i, w in enumerate(widths):
      if self.use_batch_norm:
        x = _bn(train, self.bn_momentum, self.bn_epsilon, name=f"bn_{i}", dtype=self.dtype)(x)
      x = nn.Dense(
        w,
        use_bias=self.use_bias,
        dtype=self.dtype,
        param_dtype=self.param_dtype,
        name=f"dense_{i}",
      )(x)
      if i < len(widths) - 1:
        x = nn.relu(x)
    return x


class LMKANConv(nn.Module):
  """lmKAN convolution: BatchNorm(no affine) over channels → patches in (kh, kw, C) order → LMKANDense.

  Input (N, H, W, C_in); output (N, H', W', features). FLOPs per output position 4·C_in·kh·kw·features
  (2x the convolution).

  Attributes:
    features: output channels.
    kernel_size: int or (kh, kw).
    strides: int or (sh, sw).
    padding: "SAME", "VALID" or explicit pairs (zero padding is applied after the BatchNorm).
    grid_size, table_init, init_scale, impl, dtype, param_dtype: forwarded to LMKANDense.
  """

  features: int
  kernel_size: Any = 3
  strides: Any = 1
  padding: Any = "SAME"
  grid_size: int = 8
  table_init: str = DEFAULT_INIT
  init_scale: float = 0.1
  impl: str = "auto"
  dtype: Any = None
  param_dtype: Any = jnp.float32
  bn_momentum: float = 0.9
  bn_epsilon: float = 1e-5

  @nn.compact
  def __call__(self, x, train: bool = False):
    """x: (N, H, W, C_in) → (N, H', W', features)."""
    _check_nhwc(x)
    x = _bn(train, self.bn_momentum, self.bn_epsilon, name="bn", dtype=self.dtype)(x)
    p = patches_kkc(x, self.kernel_size, self.strides, self.padding)
    return LMKANDense(self.features, name="lmkan", **_dense_kw(self))(p)


class CNN(nn.Module):
  """ReLU CNN baseline: [Conv → ReLU → pool] per entry of `channels`, flatten, ReLU dense stack.

  Input (N, H, W, C); output (N, dense_widths[-1]) logits.

  Attributes:
    channels: output channels of each convolution.
    dense_widths: widths of the dense layers after flattening, the last being the number of classes.
    kernel_size: int or (kh, kw). padding: as in `nn.Conv`.
    pool: "max", "avg" or "none", applied after every convolution with window and stride `pool_window`.
  """

  channels: Sequence[int]
  dense_widths: Sequence[int]
  kernel_size: Any = 3
  padding: Any = "SAME"
  pool: str = "max"
  pool_window: int = 2
  param_dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, x, train: bool = False):
    """x: (N, H, W, C) → (N, dense_widths[-1])."""
    del train  # no BatchNorm in the baseline; the argument keeps one calling convention.
    channels = _check_widths(self.channels, "channels")
    widths = _check_widths(self.dense_widths, "dense_widths")
    if self.pool not in _POOLS:
      raise ValueError(f"pool must be one of {_POOLS}, got {self.pool!r}.")
    _check_nhwc(x)
    k = _pair(self.kernel_size, "kernel_size")
    for i, c in enumerate(channels):
      x = nn.Conv(c, k, padding=self.padding, param_dtype=self.param_dtype, name=f"conv_{i}")(x)
      x = _pool(nn.relu(x), self.pool, self.pool_window)
    x = x.reshape(x.shape[0], -1)
    return MLP(widths, param_dtype=self.param_dtype, name="head")(x)


class LMKANCNN(nn.Module):
  """lmKAN CNN: the `CNN` with every convolution an `LMKANConv` and every dense layer an LMKANDense
  (each preceded by BatchNorm without affine), no activations.

  Input (N, H, W, C); output (N, dense_widths[-1]) logits. Same shapes as `CNN(channels, dense_widths,
  ...)`, hence exactly 2x its FLOPs (lookup vs multiply-add).
  """

  channels: Sequence[int]
  dense_widths: Sequence[int]
  kernel_size: Any = 3
  padding: Any = "SAME"
  pool: str = "max"
  pool_window: int = 2
  grid_size: int = 8
  table_init: str = DEFAULT_INIT
  init_scale: float = 0.1
  impl: str = "auto"
  dtype: Any = None
  param_dtype: Any = jnp.float32
  bn_momentum: float = 0.9
  bn_epsilon: float = 1e-5

  @nn.compact
  def __call__(self, x, train: bool = False):
    """x: (N, H, W, C) → (N, dense_widths[-1])."""
    channels = _check_widths(self.channels, "channels")
    widths = _check_widths(self.dense_widths, "dense_widths")
    if self.pool not in _POOLS:
      raise ValueError(f"pool must be one of {_POOLS}, got {self.pool!r}.")
    _check_nhwc(x)
    kw = dict(_dense_kw(self), bn_momentum=self.bn_momentum, bn_epsilon=self.bn_epsilon)
    for i, c in enumerate(channels):
      x = LMKANConv(c, self.kernel_size, padding=self.padding, name=f"conv_{i}", **kw)(x, train)
      x = _pool(x, self.pool, self.pool_window)
    x = x.reshape(x.shape[0], -1)
    return LMKANNet(widths, name="head", **kw)(x, train)


def make_network(
  widths: Sequence[int],
  *,
  baseline: bool = False,
  grid_size: int = 8,
  table_init: str = DEFAULT_INIT,
  init_scale: float = 0.1,
  impl: str = "auto",
  dtype: Any = None,
  param_dtype: Any = jnp.float32,
  bn_momentum: float = 0.9,
  bn_epsilon: float = 1e-5,
) -> nn.Module:
  """The paper's lmKAN network for a vector input, or its same-shape ReLU MLP baseline.

  `LMKANNet(widths, ...)`: BatchNorm without scale and bias before every lmKAN layer, the first
  included, no activations (the grid is static, so every layer's inputs must be normalised onto it).
  The baseline (`baseline=True`) is the ReLU MLP of the same widths, with biases, at half the FLOPs.

  Call the returned module as `net.apply(variables, x, train=True, mutable=["batch_stats"])` in
  training (batch statistics, updated running averages) and `net.apply(variables, x)` at evaluation.

  Args:
    widths: output width of every layer, the input width comes from the data, e.g. (h, h, 1).
    baseline: return the ReLU MLP baseline instead.
    grid_size, table_init, init_scale, impl: lmKAN layer options (`LMKANDense`).
    dtype: computation dtype of the layers and BatchNorms (None: promoted from inputs and params).
    param_dtype: parameter dtype.
    bn_momentum, bn_epsilon: BatchNorm statistics settings (Flax momentum 0.9 = PyTorch's 0.1).
  Returns:
    a Flax module mapping (..., N_in) to (..., widths[-1]).

  Examples:
    >>> import jax, jax.numpy as jnp
    >>> from iclr26_jax import lmkan
    >>> net = lmkan.make_network((8, 1), grid_size=6)
    >>> x = jax.random.normal(jax.random.key(0), (16, 4))
    >>> v = net.init(jax.random.key(1), x)
    >>> sorted(v), sorted(v["params"])
    (['batch_stats', 'params'], ['lmkan_0', 'lmkan_1'])
    >>> y, upd = net.apply(v, x, train=True, mutable=["batch_stats"])
    >>> y.shape
    (16, 1)
    >>> sorted(lmkan.make_network((8, 1), baseline=True).init(jax.random.key(1), x)["params"])
    ['dense_0', 'dense_1']
  """
  widths = _check_widths(widths)
  if baseline:
    return MLP(widths, dtype=dtype, param_dtype=param_dtype)
  return LMKANNet(
    widths,
    grid_size=grid_size,
    table_init=table_init,
    init_scale=init_scale,
    impl=impl,
    dtype=dtype,
    param_dtype=param_dtype,
    bn_momentum=bn_momentum,
    bn_epsilon=bn_epsilon,
  )

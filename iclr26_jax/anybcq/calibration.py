"""AnyBCQ calibration: block-wise output reconstruction of the scales, and the closed-form refit.

Park et al., "AnyBCQ", ICLR 2026, arXiv 2510.10467; official code github.com/naver-aics/anybcq
(``AnyBCQ.minimize`` / ``blockReconstruction``). ``calibrate_block`` fits the scales of every
quantized linear of a block to the full-precision block output, one precision stage at a time
(Adam on alpha^(p), beta^(p), codes constant, QDrop input mixing); ``activation_aware_scales`` and
``refit_precision`` give the closed-form output-MSE-optimal scales of one linear for fixed codes,
a_n = (D_n^T H D_n)^-1 D_n^T H w_n with H = X^T X. Also ``block_mse`` and ``output_error``.
The algorithm, with its equations and reference hyperparameters: docs/methods/anybcq.md
("The algorithm").
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.anybcq.quantizer import (
  RIDGE,
  QuantizedWeight,
  check_bits,
  check_weight,
  dequantize_planes,
  expand_precision,
  quantize,
  ridge_solve,
)

from iclr26_jax.core import validate

__all__ = [
  "BlockCalibration",
  "calibrate_block",
  "activation_aware_scales",
  "refit_precision",
  "output_error",
  "block_mse",
]


# ---------------------------------------------------------------------------------------------
# Closed-form activation-aware refit of one linear.


def _check_x_or_h(x, hessian, k):
  if (x is None) == (hessian is None):
    raise ValueError("pass exactly one of x (M, K) calibration inputs or hessian (K, K) = X^T X")
  if hessian is None:
    x = jnp.asarray(x, jnp.float32)
    chex.assert_shape(
      x,
      (None, k),
      exception_type=ValueError,
      custom_message=f"x must be (M, K) with K = {k}; got shape {x.shape}",
    )
    return jnp.einsum("mk,ml->kl", x, x, precision=jax.lax.Precision.HIGHEST)
  h = jnp.asarray(hessian, jnp.float32)
  chex.assert_shape(
    h,
    (k, k),
    exception_type=ValueError,
    custom_message=f"hessian must be (K, K) = ({k}, {k}); got shape {h.shape}",
  )
  return h


@functools.partial(jax.jit, static_argnames=("group_size", "fit_beta", "ridge", "row_batch"))
def _aa_core(w, signs, h, beta, group_size, fit_beta, ridge, row_batch):
  p, n, k = signs.shape
  g = group_size
  gr = k // g
  hi = jax.lax.Precision.HIGHEST
  s = jnp.transpose(signs.astype(jnp.float32).reshape(p, n, gr, g), (1, 2, 3, 0))  # (N, G, g, p)
  if fit_beta:
    s = jnp.concatenate([s, jnp.ones((n, gr, g, 1), jnp.float32)], axis=-1)
  target = w if beta is None else w - jnp.repeat(beta, g, axis=1)
  hv = h.reshape(gr, g, gr, g)

  def one_row(args):
    s_n, t_n = args  # (G, g, p'), (K,)
    tmat = jnp.einsum("agi,agbh->aibh", s_n, hv, precision=hi)  # (G, p', G, g)
    a = jnp.einsum("aibh,bhj->aibj", tmat, s_n, precision=hi)  # (G, p', G, p')
    d = a.shape[0] * a.shape[1]
    rhs = jnp.einsum("aibh,bh->ai", tmat, t_n.reshape(gr, g), precision=hi)
    theta = ridge_solve(a.reshape(d, d), rhs.reshape(d), ridge)
    return theta.reshape(gr, -1)

  theta = jax.lax.map(one_row, (s, target), batch_size=row_batch)  # (N, G, p')
  if fit_beta:
    return theta[..., :-1], theta[..., -1]
  return theta, beta


def activation_aware_scales(
  w,
  signs,
  x=None,
  *,
  hessian=None,
  group_size: int = 128,
  beta=None,
  fit_beta: bool = False,
  ridge: float = RIDGE,
  row_batch: int = 32,
):
  """Output-MSE-optimal scales of one linear for fixed codes (AnyBCQ section 5's closed form).

  For each output row n, with H = X^T X and D_n (K, (K/g) p) holding b_{n,G,i} in group G's rows of
  column (G, i), solves a_n = (D_n^T H D_n)^-1 D_n^T H w_n. D_n is never formed: D_n^T H D_n has
  (G, G') blocks B_{n,G}^T H_{G,G'} B_{n,G'} (einsums over a (K/g, g, K/g, g) view of H); the per-row
  system is (K/g * p')^2 with p' = p (+1 with a beta column per group).

  Args:
    w: ``(N, K)`` full-precision weight.
    signs: ``(p, N, K)`` ±1 planes (e.g. ``QuantizedWeight.planes(p)``).
    x: ``(M, K)`` calibration inputs (rows are tokens), or pass ``hessian`` = X^T X ``(K, K)``.
    group_size: g.
    beta: ``(N, K/g)`` fixed offsets (the target becomes w - beta), or None.
    fit_beta: fit one offset per (row, group) jointly (exclusive with ``beta``).
    ridge: relative ridge of the solve (see ``quantizer.ridge_solve``).
    row_batch: rows solved per vectorised batch (bounds memory).
  Returns:
    ``(alpha (N, K/g, p), beta (N, K/g) or None)``.
  """
  w = check_weight(w, group_size)
  n, k = w.shape
  signs = jnp.asarray(signs)
  chex.assert_shape(
    signs,
    (None, n, k),
    exception_type=ValueError,
    custom_message=f"signs must be (p, N, K) = (p, {n}, {k}); got shape {signs.shape}",
  )
  if beta is not None and fit_beta:
    raise ValueError("pass either beta (fixed offsets) or fit_beta=True, not both")
  if beta is not None:
    beta = jnp.asarray(beta, jnp.float32)
    chex.assert_shape(
      beta,
      (n, k // group_size),
      exception_type=ValueError,
      custom_message=f"beta must be (N, K/g) = ({n}, {k // group_size}); got {beta.shape}",
    )
  h = _check_x_or_h(x, hessian, k)
  if not bool(jnp.all(jnp.isfinite(h))):
    raise ValueError("x / hessian contains non-finite (NaN/Inf) values")
  return _aa_core(
    jnp.asarray(w), signs, h, beta, int(group_size), bool(fit_beta), float(ridge), int(row_batch)
  )


def refit_precision(
  qw: QuantizedWeight,
  w,
  x=None,
  precision: int | None = None,
  *,
  hessian=None,
  fit_beta: bool | None = None,
) -> QuantizedWeight:
  """``qw`` with alpha^(p) (and beta^(p)) replaced by the activation-aware closed form.

  Args:
    qw: the quantized weight; w: its ``(N, K)`` full-precision weight; x / hessian: as
      ``activation_aware_scales``; precision: p (default: every stored precision).
    fit_beta: refit beta^(p) jointly (default: ``qw.asymmetric``); when False and ``qw`` is
      asymmetric, beta^(p) stays fixed and only alpha^(p) is refitted.
  Returns:
    a new ``QuantizedWeight`` (planes unchanged).
  """
  if not isinstance(qw, QuantizedWeight):
    raise ValueError(f"refit_precision: qw must be a QuantizedWeight; got {type(qw).__name__}")
  fit_beta = qw.asymmetric if fit_beta is None else bool(fit_beta)
  if fit_beta and not qw.asymmetric:
    raise ValueError("refit_precision: fit_beta=True needs an asymmetric QuantizedWeight")
  if x is not None and hessian is None:
    hessian = _check_x_or_h(x, None, qw.shape[1])
  precs = qw.bits if precision is None else (precision,)
  for p in precs:
    fixed = None if fit_beta else qw.beta(p)
    alpha, beta = activation_aware_scales(
      w, qw.planes(p), hessian=hessian, group_size=qw.group_size, beta=fixed, fit_beta=fit_beta
    )
    qw = qw.with_scales(p, alpha, beta if fit_beta else None)
  return qw


def output_error(w, w_hat, x) -> float:
  """Relative output error ``||X (W - W_hat)^T||_F / ||X W^T||_F`` for W, W_hat (N, K), X (M, K)."""
  w, w_hat, x = (np.asarray(a, np.float64) for a in (w, w_hat, x))
  if w.shape != w_hat.shape or w.ndim != 2 or x.ndim != 2 or x.shape[1] != w.shape[1]:
    raise ValueError(
      f"output_error: need w, w_hat (N, K) and x (M, K); got {w.shape}, {w_hat.shape}, {x.shape}"
    )
  return float(np.linalg.norm(x @ (w - w_hat).T) / np.linalg.norm(x @ w.T))


# ---------------------------------------------------------------------------------------------
# Block-wise calibration.


class BlockCalibration(NamedTuple):
  """Result of ``calibrate_block`` (dicts keyed by precision p unless stated).

  Attributes:
    quantized: ``{name: QuantizedWeight}`` with every precision's calibrated scales.
    mse_init: block-output MSE on ``x_q`` before stage p (base quantizer at p_L, expansion from
      the calibrated alpha^(p-1) afterwards).
    mse_calibrated: the same after stage p.
    losses: ``(steps,)`` mini-batch training losses of stage p.
    snapshots: ``{name: (alpha^(p) (N, G, p), beta^(p) (N, G) or None)}`` saved at the end of
      stage p.
    outputs_q: block outputs on ``x_q`` at precision p with the calibrated scales (the next
      block's quantized-path inputs).
  """

  quantized: dict
  mse_init: dict
  mse_calibrated: dict
  losses: dict
  snapshots: dict
  outputs_q: dict


def _weights_of(signs, alphas, betas, group_size):
  return {
    name: dequantize_planes(signs[name], alphas[name], betas[name], group_size) for name in signs
  }


@functools.partial(jax.jit, static_argnames=("block_fn", "group_size"))
def _block_mse(block_fn, signs, alphas, betas, x, y_ref, group_size):
  y = block_fn(_weights_of(signs, alphas, betas, group_size), x)
  return jnp.mean(jnp.square(y - y_ref)), y


def block_mse(
  block_fn: Callable, quantized: Mapping[str, QuantizedWeight], precision: int, x, y_ref
) -> float:
  """Element-mean MSE of ``block_fn(W_hat^(p), x)`` against ``y_ref``."""
  names = sorted(quantized)
  g = quantized[names[0]].group_size
  signs = {nm: quantized[nm].planes(precision) for nm in names}
  alphas = {nm: quantized[nm].alpha(precision) for nm in names}
  betas = {nm: quantized[nm].beta(precision) for nm in names}
  return float(_block_mse(block_fn, signs, alphas, betas, jnp.asarray(x), jnp.asarray(y_ref), g)[0])


@functools.partial(
  jax.jit,
  static_argnames=("block_fn", "group_size", "steps", "batch_size", "input_prob", "train_beta"),
)
def _train_stage(
  block_fn,
  signs,
  alphas,
  betas,
  x_fp,
  x_q,
  y_fp,
  key,
  lr,
  *,
  group_size,
  steps,
  batch_size,
  input_prob,
  train_beta,
):
  trainable = {"alpha": alphas}
  if train_beta:
    trainable["beta"] = betas
  opt = optax.adam(optax.cosine_decay_schedule(lr, steps))
  m = x_fp.shape[0]

  def loss_fn(tr, xin, yt):
    ws = _weights_of(signs, tr["alpha"], tr.get("beta", betas), group_size)
    return jnp.mean(jnp.square(block_fn(ws, xin) - yt))

  def step(carry, t):
    tr, st = carry
    k_idx, k_mix = jax.random.split(jax.random.fold_in(key, t))
    idx = jax.random.randint(k_idx, (batch_size,), 0, m)
    xf, xq, yt = x_fp[idx], x_q[idx], y_fp[idx]
    if input_prob >= 1.0:
      xin = xq
    elif input_prob <= 0.0:
      xin = xf
    else:  # flat draw then reshape: rank >= 3 threefry draws compile slowly
      mask = jax.random.bernoulli(k_mix, input_prob, (xf.size,)).reshape(xf.shape)
      xin = jnp.where(mask, xq, xf)
    loss, grads = jax.value_and_grad(loss_fn)(tr, xin, yt)
    updates, st = opt.update(grads, st, tr)
    return (optax.apply_updates(tr, updates), st), loss

  (trained, _), losses = jax.lax.scan(step, (trainable, opt.init(trainable)), jnp.arange(steps))
  return trained["alpha"], trained.get("beta", betas), losses


def _pad_planes(signs, num_planes):
  """(p, N, K) -> (num_planes, N, K) with zero (inactive) planes appended."""
  return jnp.pad(signs, ((0, num_planes - signs.shape[0]), (0, 0), (0, 0)))


def _pad_scales(alpha, num_planes):
  """(N, G, p) -> (N, G, num_planes) with zero scales appended."""
  return jnp.pad(alpha, ((0, 0), (0, 0), (0, num_planes - alpha.shape[-1])))


def calibrate_block(
  block_fn: Callable[[Mapping[str, jax.Array], jax.Array], jax.Array],
  weights: Mapping[str, Any],
  x_fp,
  x_q=None,
  *,
  bits: Sequence[int] = (2, 3, 4),
  group_size: int = 128,
  asymmetric: bool = True,
  rounds: int = 20,
  steps: int = 500,
  lr: float = 1e-4,
  batch_size: int = 32,
  input_prob: float = 0.5,
  train_beta: bool = True,
  seed: int = 0,
) -> BlockCalibration:
  """Quantizes every linear of one block and calibrates its scales per precision (AnyBCQ section 6).

  Args:
    block_fn: pure ``block_fn(weights, x) -> y`` with ``weights`` = ``{name: (N, K)}`` (out, in);
      hashable (a module-level function or a ``functools.partial``), it is a static jit argument.
    weights: ``{name: (N, K)}`` full-precision weights of every linear to quantize.
    x_fp: ``(M, ...)`` full-precision block inputs (M samples along the leading axis).
    x_q: quantized-path inputs: None (= x_fp, the first block), one array shaped like x_fp for every
      stage, or ``{p: array}`` per precision.
    bits: consecutive ascending precisions (p_L .. p_H).
    group_size, asymmetric, rounds: as ``quantizer.quantize``.
    steps: Adam steps per stage; lr: peak learning rate (cosine decay to 0); batch_size: samples per
      step (drawn with replacement).
    input_prob: probability of taking each input element from ``x_q`` (QDrop mixing).
    train_beta: train beta^(p) as well (asymmetric only).
    seed: RNG seed of the mini-batch and mixing draws.
  Returns:
    ``BlockCalibration``.
  """
  if not callable(block_fn):
    raise ValueError(f"block_fn must be callable; got {type(block_fn).__name__}")
  if not isinstance(weights, Mapping) or not weights:
    raise ValueError("weights must be a non-empty dict {name: (N, K) weight}")
  bits = check_bits(bits)
  if any(b - a != 1 for a, b in zip(bits, bits[1:])):
    raise ValueError(
      f"calibrate_block: bits must be consecutive (p_L, p_L+1, ..., p_H); got {bits}"
    )
  steps = validate.positive_int(steps, "steps")
  batch_size = validate.positive_int(batch_size, "batch_size")
  if not 0.0 <= float(input_prob) <= 1.0:
    raise ValueError(f"input_prob must be in [0, 1]; got {input_prob}")
  if not float(lr) > 0:
    raise ValueError(f"lr must be positive; got {lr}")
  names = sorted(weights)
  w_np = {nm: check_weight(weights[nm], group_size, name=f"weights[{nm!r}]") for nm in names}
  x_fp = jnp.asarray(x_fp, jnp.float32)
  if x_fp.ndim < 1 or x_fp.shape[0] == 0:
    raise ValueError(f"x_fp must have a non-empty leading sample axis; got shape {x_fp.shape}")
  if not bool(jnp.all(jnp.isfinite(x_fp))):
    raise ValueError("x_fp contains non-finite (NaN/Inf) values")
  if x_q is None:
    xq_of = {p: x_fp for p in bits}
  elif isinstance(x_q, Mapping):
    missing = [p for p in bits if p not in x_q]
    if missing:
      raise ValueError(f"x_q dict lacks precisions {missing}; it needs every p in {bits}")
    xq_of = {p: jnp.asarray(x_q[p], jnp.float32) for p in bits}
  else:
    xq_of = {p: jnp.asarray(x_q, jnp.float32) for p in bits}
  for p, arr in xq_of.items():
    chex.assert_shape(
      arr,
      x_fp.shape,
      exception_type=ValueError,
      custom_message=(f"x_q (precision {p}) must have x_fp's shape {x_fp.shape}; got {arr.shape}"),
    )
  w_fp = {nm: jnp.asarray(w_np[nm]) for nm in names}
  y_fp = block_fn(w_fp, x_fp)
  train_beta = bool(train_beta) and bool(asymmetric)

  quantized = {nm: quantize(w_np[nm], (bits[0],), group_size, rounds, asymmetric) for nm in names}
  key = jax.random.key(seed)
  mse_init, mse_cal, losses, snaps, outs = {}, {}, {}, {}, {}
  for si, p in enumerate(bits):
    if si:
      quantized = {nm: expand_precision(quantized[nm], w_np[nm], rounds) for nm in names}
    xq = xq_of[p]
    # Every stage runs on p_H padded planes: zero planes with zero scales add exact zeros to W_hat
    # and get exactly zero gradients (so Adam leaves their scales at 0), and one compiled stage
    # serves all precisions.
    signs = {nm: _pad_planes(quantized[nm].planes(p), bits[-1]) for nm in names}
    alphas = {nm: _pad_scales(quantized[nm].alpha(p), bits[-1]) for nm in names}
    betas = {nm: quantized[nm].beta(p) for nm in names}
    mse, _ = _block_mse(block_fn, signs, alphas, betas, xq, y_fp, int(group_size))
    mse_init[p] = float(mse)
    alphas, betas, loss = _train_stage(
      block_fn,
      signs,
      alphas,
      betas,
      x_fp,
      xq,
      y_fp,
      jax.random.fold_in(key, p),
      jnp.float32(lr),
      group_size=int(group_size),
      steps=steps,
      batch_size=batch_size,
      input_prob=float(input_prob),
      train_beta=train_beta,
    )
    quantized = {
      nm: quantized[nm].with_scales(p, alphas[nm][..., :p], betas[nm] if train_beta else None)
      for nm in names
    }
    snaps[p] = {nm: (quantized[nm].alpha(p), quantized[nm].beta(p)) for nm in names}
    mse, y_q = _block_mse(block_fn, signs, alphas, betas, xq, y_fp, int(group_size))
    mse_cal[p] = float(mse)
    losses[p] = np.asarray(loss)
    outs[p] = y_q
  return BlockCalibration(quantized, mse_init, mse_cal, losses, snaps, outs)

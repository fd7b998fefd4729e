"""Classifier two-sample test: the paper's metric for the image presets.

``c2st`` (also exported by ``iclr26_jax.dsb.metrics``) reports a held-out classifier's accuracy,
AUROC and the paper's score 1 - 2 |AUROC - 0.5| (1: indistinguishable).

References: X. Aramayo Carrasco, G. Ksenofontov, A. Leonov, I. Koshelev, A. Korotin, "Entering the
Era of Discrete Diffusion Models: A Benchmark for Schrödinger Bridges and Entropic Optimal
Transport", ICLR 2026 (arXiv 2509.23348); reference PyTorch code github.com/gregkseno/catsbench.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from iclr26_jax.core import validate
from iclr26_jax.dsb.reference import check_states

__all__ = ["C2ST_ENCODINGS", "C2STResult", "c2st"]


C2ST_ENCODINGS = ("onehot", "scaled", "auto")
_C2ST_ONEHOT_LIMIT = 1 << 14  # one-hot input width (F S) above which "auto" scales instead


class C2STResult(NamedTuple):
  """Classifier two-sample test outcome on the held-out half.

  Attributes:
    accuracy: held-out accuracy of the real-vs-generated classifier (0.5 = indistinguishable).
    auroc: held-out AUROC (ties counted one half).
    score: 1 - 2 |AUROC - 0.5|, the paper's C2ST score (1 = indistinguishable, 0 = separable).
    num_test: held-out samples per class.
  """

  accuracy: jax.Array
  auroc: jax.Array
  score: jax.Array
  num_test: int


def c2st(
  rng: jax.Array,
  real: jax.Array,
  fake: jax.Array,
  num_categories: int,
  encoding: str = "auto",
  hidden: int = 64,
  learning_rate: float = 1e-2,
  weight_decay: float = 1e-2,
  train_steps: int = 300,
  batch_size: int = 256,
  train_fraction: float = 0.5,
) -> C2STResult:
  """Classifier two-sample test between real and generated categorical samples.

  A one-hidden-layer MLP (``hidden`` ReLU units; AdamW, as in the paper's C2ST) is trained to
  tell real (label 1) from generated (label 0) samples on ``train_fraction`` of each set and
  scored on the rest. For image presets pass concatenated pairs, real (x_start, x_end) vs
  (x_start, x_hat_end). With identical laws the held-out accuracy is a fair coin per sample
  whatever the classifier learned (labels are independent of the features), so it deviates from
  0.5 only by binomial noise of order 0.5 / sqrt(2 num_test).

  Args:
    rng: PRNG key (shuffles, initialisation, minibatches).
    real: (n, F) int samples in [0, S).
    fake: (n', F) int samples in [0, S); both sets are cut to min(n, n').
    num_categories: S.
    encoding: "onehot" (F S inputs), "scaled" (x / (S - 1) - 0.5, F inputs; for images) or
      "auto" (one-hot while F S <= 16384).
    hidden: hidden units.
    learning_rate: AdamW learning rate (paper: 1e-2).
    weight_decay: AdamW weight decay.
    train_steps: optimiser steps (minibatches drawn with replacement from the training half).
    batch_size: minibatch size per class.
    train_fraction: share of each set used for training, in (0, 1).

  Returns:
    C2STResult(accuracy, auroc, score, num_test).
  """
  s = validate.positive_int(num_categories, "num_categories", 2)
  real = check_states(real, "real", s)
  fake = check_states(fake, "fake", s, real.shape[-1])
  if encoding not in C2ST_ENCODINGS:
    raise ValueError(f"encoding must be one of {C2ST_ENCODINGS}, got {encoding!r}")
  if not 0.0 < float(train_fraction) < 1.0:
    raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction}")
  hidden = validate.positive_int(hidden, "hidden", 1)
  train_steps = validate.positive_int(train_steps, "train_steps", 1)
  batch_size = validate.positive_int(batch_size, "batch_size", 1)
  if not learning_rate > 0:
    raise ValueError(f"learning_rate must be positive, got {learning_rate}")
  if not weight_decay >= 0:
    raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
  n = min(real.shape[0], fake.shape[0])
  n_train = int(round(n * float(train_fraction)))
  if n_train < 1 or n - n_train < 1:
    raise ValueError(
      f"real/fake: need at least one training and one held-out sample per "
      f"class, got n = {n} with train_fraction = {train_fraction}"
    )
  f = real.shape[-1]
  if encoding == "auto":
    encoding = "onehot" if f * s <= _C2ST_ONEHOT_LIMIT else "scaled"
  accuracy, auroc = _c2st(
    rng,
    real[:n].astype(jnp.int32),
    fake[:n].astype(jnp.int32),
    s,
    encoding,
    hidden,
    float(learning_rate),
    float(weight_decay),
    train_steps,
    min(batch_size, n_train),
    n_train,
  )
  return C2STResult(accuracy, auroc, 1.0 - 2.0 * jnp.abs(auroc - 0.5), n - n_train)


def _c2st_features(x: jax.Array, s: int, encoding: str) -> jax.Array:
  if encoding == "onehot":
    return jax.nn.one_hot(x, s, dtype=jnp.float32).reshape(x.shape[0], -1)
  return x.astype(jnp.float32) / (s - 1) - 0.5


@functools.partial(jax.jit, static_argnums=(3, 4, 5, 6, 7, 8, 9, 10))
def _c2st(
  rng,
  real,
  fake,
  s,
  encoding,
  hidden,
  learning_rate,
  weight_decay,
  train_steps,
  batch_size,
  n_train,
):
  import optax

  n = real.shape[0]
  k_perm_r, k_perm_f, k_init, k_steps = jax.random.split(rng, 4)
  real = real[jax.random.permutation(k_perm_r, n)]
  fake = fake[jax.random.permutation(k_perm_f, n)]
  width = real.shape[1] * (s if encoding == "onehot" else 1)
  k1, k2 = jax.random.split(k_init)
  params = {
    "w1": jax.random.normal(k1, (width * hidden,), jnp.float32).reshape(width, hidden)
    / jnp.sqrt(jnp.float32(width)),
    "b1": jnp.zeros((hidden,), jnp.float32),
    "w2": jax.random.normal(k2, (hidden,), jnp.float32) / jnp.sqrt(jnp.float32(hidden)),
    "b2": jnp.zeros((), jnp.float32),
  }

  def logit(p, x):
    h = jax.nn.relu(_c2st_features(x, s, encoding) @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]

  def loss_fn(p, xr, xf):
    return jnp.mean(optax.sigmoid_binary_cross_entropy(logit(p, xr), 1.0)) + jnp.mean(
      optax.sigmoid_binary_cross_entropy(logit(p, xf), 0.0)
    )

  tx = optax.adamw(learning_rate, weight_decay=weight_decay)

  def step(carry, key):
    p, opt = carry
    kr, kf = jax.random.split(key)
    xr = real[jax.random.randint(kr, (batch_size,), 0, n_train)]
    xf = fake[jax.random.randint(kf, (batch_size,), 0, n_train)]
    grads = jax.grad(loss_fn)(p, xr, xf)
    updates, opt = tx.update(grads, opt, p)
    return (optax.apply_updates(p, updates), opt), None

  (params, _), _ = jax.lax.scan(
    step, (params, tx.init(params)), jax.random.split(k_steps, train_steps)
  )
  lr = logit(params, real[n_train:])
  lf = logit(params, fake[n_train:])
  accuracy = 0.5 * (jnp.mean(lr > 0) + jnp.mean(lf <= 0))
  return accuracy, _auroc(lr, lf)


def _auroc(pos: jax.Array, neg: jax.Array) -> jax.Array:
  """P(score_pos > score_neg) + P(equal) / 2 (Mann-Whitney), exact under ties, O(n log n)."""
  neg_sorted = jnp.sort(neg)
  below = jnp.searchsorted(neg_sorted, pos, side="left")
  not_above = jnp.searchsorted(neg_sorted, pos, side="right")
  wins = below + 0.5 * (not_above - below)
  return jnp.sum(wins) / (pos.shape[0] * neg.shape[0])

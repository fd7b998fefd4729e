"""AnyBCQ quick task metric: an MLP on scikit-learn's bundled digits, test accuracy vs bits.

The quick task: ``load_digits`` (1797 x 64, 10 classes, bundled with scikit-learn, no
download), an MLP 64-256-256-10 trained for a few hundred full-batch Adam steps, then test accuracy at
full precision and at 4 / 3 / 2 bits for AnyBCQ (one multi-precision weight per layer, p-bit weights
from ``QuantizedWeight.dequantize(p)``), fixed-precision BCQ and RTN. All three Dense kernels are
quantized (group size 64 for the 64-input layer, 128 for the others); biases stay FP. Weight-only,
no calibration.

Used by ``python -m experiments.anybcq_digits_eval`` (the table) and the tests; it is an
experiment, not part of the library.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.anybcq.tree import METHODS, quantize_kernels
from iclr26_jax.nn import mlp

__all__ = ["MLP", "LAYERS", "load_split", "train_mlp", "accuracy", "evaluate"]

LAYERS = ("fc0", "fc1", "fc2")


class MLP(nn.Module):
  """64-256-256-10 ReLU MLP: x ``(B, 64)`` -> logits ``(B, 10)``."""

  hidden: int = 256

  @nn.compact
  def __call__(self, x):
    return mlp(x, (self.hidden, self.hidden), 10, activation=nn.relu, names=LAYERS)


def load_split(test_fraction: float = 0.25, seed: int = 0):
  """Digits scaled to [0, 1], split by a seeded permutation.

  Returns:
    ``(x_train (n, 64) f32, y_train (n,) i32, x_test, y_test)``.
  """
  from sklearn.datasets import load_digits

  d = load_digits()
  x = (d.data / 16.0).astype(np.float32)
  y = d.target.astype(np.int32)
  perm = np.random.default_rng(seed).permutation(len(y))
  n_test = int(round(test_fraction * len(y)))
  te, tr = perm[:n_test], perm[n_test:]
  return x[tr], y[tr], x[te], y[te]


@jax.jit
def _logits(params, x):
  return MLP().apply(params, x)


def accuracy(params, x, y) -> float:
  """Fraction of rows whose argmax logit equals the label."""
  return float(np.mean(np.asarray(jnp.argmax(_logits(params, x), -1)) == np.asarray(y)))


def train_mlp(x, y, steps: int = 300, lr: float = 3e-3, seed: int = 0):
  """Full-batch Adam with cosine decay on the cross-entropy; returns the parameters."""
  params = MLP().init(jax.random.PRNGKey(seed), jnp.zeros((1, x.shape[1]), jnp.float32))
  tx = optax.adam(optax.cosine_decay_schedule(lr, steps))
  opt_state = tx.init(params)
  x, y = jnp.asarray(x), jnp.asarray(y)

  def loss_fn(p):
    return optax.softmax_cross_entropy_with_integer_labels(MLP().apply(p, x), y).mean()

  @jax.jit
  def run(params, opt_state):
    def body(carry, _):
      p, s = carry
      g = jax.grad(loss_fn)(p)
      u, s = tx.update(g, s, p)
      return (optax.apply_updates(p, u), s), None

    return jax.lax.scan(body, (params, opt_state), None, length=steps)[0][0]

  return run(params, opt_state)


def evaluate(
  params,
  x_test,
  y_test,
  bits: Sequence[int] = (2, 3, 4),
  methods: Sequence[str] = METHODS,
  group_size: int = 128,
  rounds: int = 20,
  asymmetric: bool = True,
) -> dict:
  """Test accuracy ``{"fp": acc, method: {p: acc}}`` (group size min(group_size, K) per layer)."""
  out = {"fp": accuracy(params, x_test, y_test)}
  for m in methods:
    q = quantize_kernels(params, [(n,) for n in LAYERS], m, bits, group_size, rounds, asymmetric)
    out[m] = {p: accuracy(q[p], x_test, y_test) for p in q}
  return out

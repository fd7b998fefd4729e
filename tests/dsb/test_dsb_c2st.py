"""Tests for the classifier two-sample test ``metrics.c2st``.

Oracles:
* identical laws: whatever the classifier learned on the training half, held-out labels are
  independent of the features, so the held-out accuracy has mean exactly 1/2 and standard
  deviation at most sqrt(1 / (8 n)) for n held-out samples per class; the held-out AUROC is the
  Mann-Whitney statistic under H0, with standard deviation sqrt((2n + 1) / (12 n^2)) (ties only
  lower it). The tolerances are 5 standard deviations (two-sided miss probability < 1e-6 under a
  normal approximation).
* a constant sample against itself: every logit ties, so AUROC is exactly 1/2 and the score 1.
* disjoint supports: a one-hidden-layer MLP separates them; accuracy and AUROC near 1, score
  near 0.
* the AUROC helper against scikit-learn's ``roc_auc_score`` on tied scores.
The image presets' reversed evaluation in the runner (C2ST of (y, x_0) vs (y, x_hat_0)) and the
image preset built from a user-supplied array are tested here too.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb import evaluation

S, F, N = 5, 4, 4000  # categories, features, samples per class (half held out)


def _draw(rng, probs, n=N, f=F):
  return jnp.asarray(rng.choice(len(probs), size=(n, f), p=probs), jnp.int32)


def test_identical_laws_are_indistinguishable():
  rng = np.random.default_rng(0)
  probs = np.array([0.4, 0.25, 0.15, 0.15, 0.05])
  res = M.c2st(jax.random.key(0), _draw(rng, probs), _draw(rng, probs), S)
  n = res.num_test
  assert n == N // 2
  acc_tol = 5 * np.sqrt(1.0 / (8 * n))
  auc_tol = 5 * np.sqrt((2 * n + 1) / (12.0 * n * n))
  assert abs(float(res.accuracy) - 0.5) < acc_tol, (float(res.accuracy), acc_tol)
  assert abs(float(res.auroc) - 0.5) < auc_tol, (float(res.auroc), auc_tol)
  assert float(res.score) > 1 - 2 * auc_tol


def test_constant_samples_tie_exactly():
  zeros = jnp.zeros((N, F), jnp.int32)
  res = M.c2st(jax.random.key(1), zeros, zeros, S)
  assert float(res.auroc) == 0.5 and float(res.score) == 1.0
  assert float(res.accuracy) == 0.5  # one class all right, the other all wrong


def test_disjoint_supports_are_separated():
  rng = np.random.default_rng(1)
  low = _draw(rng, np.array([0.5, 0.5, 0.0, 0.0, 0.0]))
  high = _draw(rng, np.array([0.0, 0.0, 0.0, 0.5, 0.5]))
  res = M.c2st(jax.random.key(2), low, high, S)
  assert float(res.accuracy) > 0.99 and float(res.auroc) > 0.99
  assert float(res.score) < 0.02


def test_scaled_encoding_separates_shifted_images():
  """The image path (scaled pixel inputs): 'dark' vs 'bright' 64-pixel images, S = 256."""
  rng = np.random.default_rng(2)
  dark = jnp.asarray(rng.integers(0, 128, size=(1000, 64)), jnp.int32)
  bright = jnp.asarray(rng.integers(64, 256, size=(1000, 64)), jnp.int32)
  res = M.c2st(jax.random.key(3), dark, bright, 256, encoding="scaled")
  assert float(res.accuracy) > 0.95 and float(res.score) < 0.1


def test_auroc_matches_sklearn_with_ties():
  from sklearn.metrics import roc_auc_score

  rng = np.random.default_rng(3)
  pos = rng.integers(0, 6, size=300).astype(np.float32)
  neg = rng.integers(0, 5, size=200).astype(np.float32)
  want = roc_auc_score(np.r_[np.ones(300), np.zeros(200)], np.r_[pos, neg])
  from iclr26_jax.dsb import c2st as c2st_lib

  got = float(c2st_lib._auroc(jnp.asarray(pos), jnp.asarray(neg)))
  assert got == pytest.approx(want, abs=1e-6)


def test_c2st_validates_inputs():
  x = jnp.zeros((10, F), jnp.int32)
  with pytest.raises(ValueError, match="encoding"):
    M.c2st(jax.random.key(0), x, x, S, encoding="bits")
  with pytest.raises(ValueError, match="train_fraction"):
    M.c2st(jax.random.key(0), x, x, S, train_fraction=1.0)
  with pytest.raises(ValueError, match="fake"):
    M.c2st(jax.random.key(0), x, jnp.zeros((10, F + 1), jnp.int32), S)
  with pytest.raises(ValueError, match="real"):
    M.c2st(jax.random.key(0), x + S, x, S)


def test_image_preset_from_user_array():
  """The coloured-MNIST preset is built from a user-supplied source array (no download)."""
  rng = np.random.default_rng(0)
  src = rng.integers(0, 256, size=(5, 3072)).astype(np.int32)
  bench = bm.make_preset("image_d3072_s256_prior_gaussian_a0.01", 0, source_samples=src)
  assert bench.reverse and bench.dim == 3072 and bench.num_categories == 256
  assert bench.num_potentials == 10 and bench.num_steps == 15
  x0 = np.asarray(bench.sample_source(jax.random.key(0), 50))
  assert all(any((row == s_).all() for s_ in src) for row in x0)  # rows of the user's array


def test_reversed_evaluation_with_c2st():
  """The image presets' evaluation path (reversed: condition on y, generate x_0; C2ST, swapped
  perplexity) on a small reversed instance of the same recipe (D = 24, S = 64, empirical
  structured source: four prototypes with small pixel noise). The truth (fresh true pairs)
  must look real to the classifier; the prior (the reference kernel as the reverse map) blurs
  the prototypes and must not; unsupported solvers raise."""
  rng = np.random.default_rng(0)
  protos = rng.integers(0, 64, size=(4, 24))
  src = np.clip(
    protos[rng.integers(0, 4, size=512)] + rng.integers(-1, 2, size=(512, 24)), 0, 63
  ).astype(np.int32)
  bench = bm.make_benchmark(
    24,
    64,
    "gaussian",
    0.05,
    15,
    8,
    3,
    seed=0,
    source="empirical",
    source_samples=src,
    bump_sigma=4.0,
    reverse=True,
  )
  ctx = evaluation.prepare_preset(bench, num_test=1024, num_points=1, cond_samples=1, num_traj=1)
  assert ctx.name == "custom" and not ctx.enumerable
  rows = {s: evaluation.evaluate_solver(s, ctx, 0) for s in ("truth", "independent", "prior")}
  for r in rows.values():
    assert np.isfinite(r["c2st"]) and np.isfinite(r["shape"]) and np.isfinite(r["sb_perplexity"])
    assert np.isnan(r["cond_shape"]) and np.isnan(r["traj_kl_fwd"])
  # Truth vs truth: AUROC within 5 sd of 1/2 on 512 held-out pairs per class (see
  # test_dsb_c2st.py), i.e. score > 1 - 2 * 5 * 0.018. (The independent baseline is not
  # asserted on: under this much reference noise y carries little information on x_0.)
  assert rows["truth"]["c2st"] > 0.82
  assert rows["prior"]["c2st"] < 0.5
  with pytest.raises(ValueError, match="reversed"):
    evaluation.evaluate_solver("dlightsb", ctx, 0, steps=10)

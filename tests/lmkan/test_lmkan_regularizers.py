"""The Hessian penalty (zero on affine tables, exact on quadratics, its quadratic form and null
space) and the two-phase schedule."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.lmkan.layer import affine_table
from iclr26_jax.lmkan.regularizers import (
  hessian_operator,
  hessian_penalty,
  hessian_penalty_table,
  two_phase_schedule,
  two_phase_schedule_from_config,
)


# Jitted once per table shape (tests share the (2, 9, 9, 3) shape) to keep compile time low.
_penalty = jax.jit(hessian_penalty_table)
_model_penalty = jax.jit(hessian_penalty)
_affine = jax.jit(affine_table)


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _node_table(grid, fn, p=1, q=1):
  t = grid.nodes
  f = fn(t[:, None], t[None, :])
  return jnp.asarray(np.broadcast_to(f[None, :, :, None], (p, grid.G + 1, grid.G + 1, q)).copy())


def test_penalty_zero_on_affine_tables():
  # Affine tables: the non-uniform second differences vanish identically; values are O(10), so float64
  # rounding leaves (1e-15·10/h²)² ≈ 1e-26 per node; 1e-20 is far below any non-affine table's penalty.
  rng = np.random.default_rng(0)
  for g in (4, 8):
    grid = SigmaGrid(g)
    table = _affine(
      jnp.asarray(rng.standard_normal((3, 4))), grid, jnp.asarray(rng.standard_normal(3))
    )
    assert abs(float(_penalty(table, grid))) < 1e-20
    tree = {"a": {"table": table}, "b": {"kernel": jnp.ones(3), "table": table}}
    assert abs(float(_model_penalty(tree))) < 1e-20


def test_penalty_exact_on_quadratics_with_true_spacings():
  # Three-point non-uniform differences are exact for quadratics, and the cross difference is exact for
  # x·y. f = x² → F_xx = 2, F_xy = F_yy = 0 → penalty 4 per function; f = x·y → F_xy = 1 → penalty 2;
  # f = x² + y² → 8. A mean-spacing implementation gets these wrong on the non-uniform grid.
  grid = SigmaGrid(8)
  cases = [
    (lambda x, y: x**2 + 0 * y, 4.0),
    (lambda x, y: x * y, 2.0),
    (lambda x, y: x**2 + y**2, 8.0),
  ]
  for fn, want in cases:
    table = _node_table(grid, fn, p=2, q=3)
    assert float(_penalty(table)) == pytest.approx(6 * want, rel=1e-10)  # summed over 6 functions


def test_penalty_matches_quadratic_form_and_is_positive_on_random_tables():
  # Two independent implementations: the vectorised penalty and ‖D f‖²/(G−1)² with the explicit operator.
  grid = SigmaGrid(8)
  table = jnp.asarray(np.random.default_rng(1).standard_normal((2, 9, 9, 3)))
  d = hessian_operator(grid)
  tn = np.asarray(table)
  want = sum(np.sum((d @ tn[p, :, :, q].ravel()) ** 2) for p in range(2) for q in range(3)) / 49
  got = float(_penalty(table))
  assert got == pytest.approx(want, rel=1e-12)
  assert got > 0
  # The model penalty sums over layers.
  assert float(
    _model_penalty({"l0": {"table": table}, "l1": {"table": 2 * table}})
  ) == pytest.approx(5 * want, rel=1e-12)


@pytest.mark.parametrize("g, null_dim", [(3, 4), (4, 3), (5, 3), (8, 3)])
def test_penalty_null_space_dimension(g, null_dim):
  # The penalty is a PSD quadratic form fᵀ(DᵀD)f; its null space is that of D. Singular values of D
  # separate cleanly (the largest "zero" is ~1e-14, the smallest non-zero ~0.5), so a 1e-8 cut is safe.
  grid = SigmaGrid(g)
  d = hessian_operator(grid)
  s = np.linalg.svd(d, compute_uv=False)
  s = np.concatenate([s, np.zeros(d.shape[1] - s.size)])
  assert int(np.sum(s < 1e-8 * s.max())) == null_dim
  if g >= 4:  # the null space is spanned by 1, t_i, t_j
    t = grid.nodes
    basis = [
      np.ones((g + 1, g + 1)),
      np.broadcast_to(t[:, None], (g + 1, g + 1)),
      np.broadcast_to(t[None, :], (g + 1, g + 1)),
    ]
    for v in basis:
      assert np.max(np.abs(d @ v.ravel())) < 1e-12


def test_penalty_errors():
  with pytest.raises(ValueError, match="no lmKAN table"):
    hessian_penalty({"dense": {"kernel": jnp.ones((3, 3))}})
  with pytest.raises(ValueError, match="has G = 4, but grid has G = 5"):
    hessian_penalty_table(jnp.zeros((1, 5, 5, 1)), SigmaGrid(5))
  with pytest.raises(ValueError, match=r"table must have shape \(P, G\+1, G\+1, Q\)"):
    hessian_penalty_table(jnp.zeros((5, 5, 1)))


def test_two_phase_schedule_values():
  s = two_phase_schedule(
    total_steps=200, phase1_fraction=0.5, lr=3e-3, lambda0=2.0, lambda_decades=8.0
  )
  assert s.phase1_steps == 100 and s.total_steps == 200
  lam = lambda k: float(s.hessian_lambda(k))
  lr = lambda k: float(s.learning_rate(k))
  # float32 schedule arithmetic inside optax: relative 1e-5.
  assert lam(0) == pytest.approx(2.0, rel=1e-5)
  assert lam(50) == pytest.approx(2.0 * 1e-4, rel=1e-4)
  assert lam(99) == pytest.approx(2.0 * 10 ** (-8 * 99 / 100), rel=1e-3)
  assert lam(100) == 0.0 and lam(199) == 0.0
  assert lr(0) == pytest.approx(3e-3, rel=1e-6) and lr(99) == pytest.approx(3e-3, rel=1e-6)
  assert lr(100) == pytest.approx(3e-3, rel=1e-6)
  assert lr(150) == pytest.approx(1.5e-3, rel=1e-5)
  assert lr(200) == pytest.approx(0.0, abs=1e-9)
  # λ is computed from a traced step: one compiled function serves every step.
  f = jax.jit(lambda k: (s.hessian_lambda(k), s.learning_rate(k)))
  vals = [tuple(map(float, f(jnp.asarray(k)))) for k in (0, 50, 150)]
  assert vals[0][0] == pytest.approx(2.0, rel=1e-5) and vals[1][0] == pytest.approx(2e-4, rel=1e-4)
  assert vals[2] == (0.0, pytest.approx(1.5e-3, rel=1e-5))
  assert f._cache_size() == 1


def test_two_phase_schedule_staircase_and_config():
  s = two_phase_schedule(total_steps=100, lambda0=1.0, lambda_decades=5.0, steps_per_epoch=10)
  vals = [float(s.hessian_lambda(k)) for k in range(0, 50)]
  assert len(set(vals[:10])) == 1 and vals[10] == pytest.approx(10 ** (-5 * 10 / 50), rel=1e-4)
  cfg = {
    "total_steps": 60,
    "lr": 1e-2,
    "lambda0": 0.5,
    "lambda_decades": 3.0,
    "phase1_fraction": 0.25,
    "other_field": "ignored",
  }
  for c in (cfg, ml_collections.ConfigDict(cfg)):
    sc = two_phase_schedule_from_config(c)
    assert sc.phase1_steps == 15
    assert float(sc.hessian_lambda(0)) == pytest.approx(0.5)
    assert float(sc.learning_rate(0)) == pytest.approx(1e-2)
    assert float(sc.hessian_lambda(15)) == 0.0


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(total_steps=1), "total_steps"),
    (dict(total_steps=10, phase1_fraction=1.0), "phase1_fraction"),
    (dict(total_steps=10, lr=0.0), "lr"),
    (dict(total_steps=10, lambda0=-1.0), "lambda0"),
    (dict(total_steps=10, steps_per_epoch=0), "steps_per_epoch"),
  ],
)
def test_two_phase_schedule_errors(kwargs, match):
  with pytest.raises(ValueError, match=match):
    two_phase_schedule(**kwargs)
  with pytest.raises(ValueError, match="total_steps"):
    two_phase_schedule_from_config({"lr": 1e-3})

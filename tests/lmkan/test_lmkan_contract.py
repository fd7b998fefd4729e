"""The accuracy contract of ``lmkan.LMKANDense`` at its defaults (G = 8, the affine table init),
as the method page states it under "Accuracy at the defaults".

Problem: y = sin(2 x1) x2 + 0.5 cos(x1 + x2), x ~ N(0, I_2), fitted by one ``LMKANDense(1)`` (a
single 9 x 9 table on the sigma grid) with ``recipe_optimizer(2000, lr=1e-2)``, batches of 512
fresh points; the score is test MSE / Var(y) on 8,192 fixed points.

Oracles:

* the best any table of the layer reaches on those test points: the layer is linear in its table,
  so the least-squares table on the test set itself (computed here in float64 from the layer's
  response to each of the 81 unit tables) gives the smallest test MSE any training can reach;
* a linear (affine) model scores 1 in expectation: sin(2 x1) x2 and cos(x1 + x2) are
  uncorrelated with x1 and x2 (odd against even functions of a symmetric law), so the best affine
  fit explains nothing beyond the mean; checked here on the test set.

The contract: the trained layer's test MSE / Var is within 1.3x the least-squares floor (measured
in this test's setting: floor 0.072; trained 0.083, 0.085, 0.084 with init / batch seeds 0, 1, 2,
i.e. 1.16-1.19x), against 1 for a linear layer. With the recipe's default learning rate (1e-3,
the reference's choice for deep networks) the same 2000 steps end well above that (measured 1.21,
1.08, 0.18 for seeds 0, 1, 2: Adam moves each table entry by about lr per step at most, and how
far the random affine start is from the target depends on its seed), which is why the page says
to raise it for small networks; checked here as at least 1.5x the fit at 1e-2.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax import lmkan
from tests.helpers import assert_page_cites_existing_tests

STEPS, BATCH = 2000, 512


def _target(x):
  return jnp.sin(2 * x[:, 0]) * x[:, 1] + 0.5 * jnp.cos(x[:, 0] + x[:, 1])


def _fit(layer, lr):
  """The table after STEPS updates of the recipe at learning rate lr."""
  table = layer.init(jax.random.key(0), jnp.zeros((2, 2)))["params"]["table"]
  tx, _ = lmkan.recipe_optimizer(STEPS, lr=lr)

  def loss(p, x):
    return jnp.mean((layer.apply({"params": p}, x)[:, 0] - _target(x)) ** 2)

  def step(carry, key):
    p, o = carry
    upd, o = tx.update(jax.grad(loss)(p, jax.random.normal(key, (BATCH, 2))), o, p)
    return (optax.apply_updates(p, upd), o), None

  params = {"table": table}
  keys = jax.random.split(jax.random.key(3), STEPS)
  (params, _), _ = jax.jit(lambda c, k: jax.lax.scan(step, c, k))((params, tx.init(params)), keys)
  return params["table"]


def test_dense_layer_at_its_defaults_reaches_the_least_squares_floor():
  layer = lmkan.LMKANDense(1)
  assert layer.grid_size == 8 and layer.table_init == "affine"
  xt = jax.random.normal(jax.random.key(2), (8192, 2))
  yt = np.asarray(_target(xt), np.float64)

  def mse_over_var(pred):
    return float(np.mean((np.asarray(pred, np.float64) - yt) ** 2) / np.var(yt))

  apply = jax.jit(lambda t: layer.apply({"params": {"table": t}}, xt)[:, 0])
  shape = (1, 9, 9, 1)  # (pairs, G + 1, G + 1, features)
  design = np.asarray(jax.vmap(apply)(jnp.eye(81).reshape((81,) + shape)), np.float64).T
  table_ls, *_ = np.linalg.lstsq(design, yt, rcond=None)
  floor = mse_over_var(design @ table_ls)
  affine = np.c_[np.ones(len(yt)), np.asarray(xt, np.float64)]
  linear = mse_over_var(affine @ np.linalg.lstsq(affine, yt, rcond=None)[0])
  assert linear > 0.98, linear  # the oracle's premise: nothing linear to fit
  assert floor < 0.1, floor  # a 9 x 9 table can represent the target well

  trained = mse_over_var(apply(_fit(layer, 1e-2)))
  assert floor <= trained < 1.3 * floor, (trained, floor)
  slow = mse_over_var(apply(_fit(layer, 1e-3)))  # recipe_optimizer's default learning rate
  assert slow > 1.5 * trained, (slow, trained)


def test_the_method_page_cites_this_contract():
  cited = assert_page_cites_existing_tests("lmkan")
  assert (
    "tests/lmkan/test_lmkan_contract.py",
    "test_dense_layer_at_its_defaults_reaches_the_least_squares_floor",
  ) in cited

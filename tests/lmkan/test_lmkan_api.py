"""The lmKAN public API: `LMKANDense(dtype, param_dtype)` in bf16, the default init, the recipe in optax.

Oracles: the dense hat-matrix formulation (`spline_lookup_dense`, plain autodiff, no custom VJP) in
float32 for the bf16 paths (XLA and Pallas in interpret mode), linearity and a zero Hessian penalty for
the default init, the gradient of data loss + λ·penalty with λ from its closed form for the optax
transform, and the exact least-squares floor of a bilinear target for a bf16 training loop.

bf16 tolerances. The layer rounds x and the f32 table to bf16 (relative error ≤ 2^-9 each), computes in
float32 and rounds y once. Against the f32 reference on the *rounded* operands only the output rounding
remains: |y − y_ref| ≤ 2^-9·|y_ref| + f32 rounding, checked per entry with 2^-8 (a lookup that summed its
32 pairs or formed its weights in bf16 misses this by several times). Against the reference on the
unrounded operands the input rounding enters through the bilinear weights, amplified outside the grid
(δ grows linearly there), so that comparison is only checked to 3 % of the output scale, which still
catches a wrong corner, cell or weight (O(1)). Gradients: the bf16 cotangent cos(y) and the bf16-rounded
dx / dT add one more rounding each; checked to 2^-6 of the gradient scale against the rounded-operand
reference. dx is not compared with the unrounded reference: it is discontinuous across grid lines.
"""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from iclr26_jax import lmkan
from iclr26_jax.lmkan import method as lmkan_method
from iclr26_jax.lmkan.config import default_config
from iclr26_jax.lmkan.layer import pair_inputs
from kernels_pallas.spline_lookup.reference import spline_lookup_dense

BF16 = jnp.bfloat16
N_IN, Q, G = 64, 5, 6  # 32 pairs: enough terms that summing them in bf16 would show


def _data():
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((3, 5, N_IN)) * 1.5, jnp.float32)  # many beyond [t_0, t_G]
  table = jnp.asarray(rng.standard_normal((N_IN // 2, G + 1, G + 1, Q)) * 0.3, jnp.float32)
  return x, table


def _loss_and_grads(f, table, x):
  """y, dL/dtable, dL/dx of L = Σ sin(y) for y = f(table, x), in one jitted program."""

  def loss(t, xx):
    y = f(t, xx)
    return jnp.sum(jnp.sin(y.astype(jnp.float32))), y

  (_, y), (gt, gx) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(table, x)
  return y, gt, gx


def _reference(table, x):
  """float32 dense hat-matrix lookup (plain autodiff)."""
  lead = x.shape[:-1]
  y = spline_lookup_dense(pair_inputs(x.reshape(-1, N_IN)), table, lmkan.SigmaGrid(G))
  return y.reshape(lead + (Q,))


@functools.lru_cache(maxsize=None)
def _layer_run(impl):
  x, table = _data()
  layer = lmkan.LMKANDense(Q, grid_size=G, impl=impl, dtype=BF16)
  f = lambda t, xx: layer.apply({"params": {"table": t}}, xx)
  return _loss_and_grads(f, table, x)


def _rel_err(got, want):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  assert got.shape == want.shape
  return np.max(np.abs(got - want)) / (1.0 + np.max(np.abs(want)))


@pytest.mark.parametrize("impl", ["xla", "pallas"])
def test_bf16_compute_f32_tables_forward_and_grads_match_f32_dense_reference(impl):
  x, table = _data()
  y, gt, gx = _layer_run(impl)
  assert y.dtype == BF16 and y.shape == (3, 5, Q)
  assert gt.dtype == jnp.float32 and gt.shape == table.shape  # the param's own dtype
  assert gx.dtype == jnp.float32 and gx.shape == x.shape  # the input's own dtype
  # Oracle on the rounded operands: only the output rounding (and f32 arithmetic) remains.
  xr, tr = x.astype(BF16).astype(jnp.float32), table.astype(BF16).astype(jnp.float32)
  yr, gtr, gxr = _loss_and_grads(_reference, tr, xr)
  y64, yr64 = np.asarray(y, np.float64), np.asarray(yr, np.float64)
  err = np.abs(y64 - yr64)
  bound = 2.0**-8 * np.abs(yr64) + 1e-5 * (1.0 + np.abs(yr64).max())
  assert np.all(err <= bound), f"max err / bound {np.max(err / bound):.3g}"
  assert _rel_err(gt, gtr) <= 2.0**-6, _rel_err(gt, gtr)
  assert _rel_err(gx, gxr) <= 2.0**-6, _rel_err(gx, gxr)
  # Oracle on the unrounded f32 operands: the bf16 layer is a rounding of the f32 one. (Not dx: it jumps
  # across grid lines, and rounding x to bf16 moves some inputs across one: measured 0.13 here.)
  y32, gt32, _ = _loss_and_grads(_reference, table, x)
  assert _rel_err(y, y32) <= 0.03, _rel_err(y, y32)
  assert _rel_err(gt, gt32) <= 0.03, _rel_err(gt, gt32)


def test_dtype_promotion_follows_flax_dense():
  # dtype=None promotes input and param dtypes as nn.Dense does; param_dtype=bf16 stores bf16 tables.
  x = jnp.ones((2, 4), BF16)
  cases = [
    (dict(), x, jnp.float32, jnp.float32),  # bf16 input, f32 table → f32 compute
    (dict(dtype=BF16), x.astype(jnp.float32), jnp.float32, BF16),
    (dict(param_dtype=BF16), x, BF16, BF16),
  ]
  for kw, xx, table_dt, out_dt in cases:
    layer = lmkan.LMKANDense(3, grid_size=4, **kw)
    v = layer.init(jax.random.key(0), xx)
    dense = nn.Dense(3, use_bias=False, **kw)
    assert v["params"]["table"].dtype == table_dt
    assert layer.apply(v, xx).dtype == out_dt
    assert dense.apply(dense.init(jax.random.key(0), xx), xx).dtype == out_dt


def test_default_init_is_the_recommended_affine_start():
  # Layer, network and CNN defaults equal the trainer config's (README-recommended) init, and that init
  # is exactly linear (a Hessian penalty of 0 and f(a·u + b·v) = a·f(u) + b·f(v), beyond the grid too).
  cfg = default_config()
  assert lmkan.LMKANDense(1).table_init == cfg.lmkan.table_init == "affine"
  assert lmkan.LMKANNet((1,)).table_init == lmkan.LMKANCNN((1,), (1,)).table_init == "affine"
  assert lmkan.make_network((1,)).table_init == "affine"
  rng = np.random.default_rng(3)
  u, v = (jnp.asarray(rng.standard_normal((4, 7)) * 4.0, jnp.float32) for _ in range(2))
  layer = lmkan.LMKANDense(3, grid_size=8)
  params = layer.init(jax.random.key(0), u)
  assert float(lmkan.hessian_penalty(params)) < 1e-9
  f = lambda z: np.asarray(layer.apply(params, z))
  np.testing.assert_allclose(f(0.5 * u - 2.0 * v), 0.5 * f(u) - 2.0 * f(v), atol=2e-4)
  noise = lmkan.LMKANDense(3, grid_size=8, table_init="noise").init(jax.random.key(0), u)
  assert float(lmkan.hessian_penalty(noise)) > 1e-3  # the other init is not affine


def test_hessian_transform_equals_gradient_of_penalised_loss():
  # optax.chain(add_hessian_penalty(λ), adam) == adam on ∇(data + λ(step)·penalty), with λ(step) from
  # its closed form λ0·10^(−decades·step/S1) (phase 1), over several steps; float64.
  with jax.enable_x64(True):
    net = lmkan.make_network((4, 1), grid_size=4, table_init="noise", param_dtype=jnp.float64)
    rng = np.random.default_rng(4)
    x = jnp.asarray(rng.standard_normal((32, 6)))
    y = jnp.asarray(rng.standard_normal((32, 1)))
    variables = net.init(jax.random.key(0), x)
    params, stats = variables["params"], variables["batch_stats"]
    total, lam0, dec = 20, 0.7, 4.0
    tx, sched = lmkan.recipe_optimizer(total, lr=1e-2, lambda0=lam0, lambda_decades=dec)
    assert sched.phase1_steps == 10

    def data_loss(p):
      out, _ = net.apply(
        {"params": p, "batch_stats": stats}, x, train=True, mutable=["batch_stats"]
      )
      return jnp.mean((out - y) ** 2)

    ref_tx = optax.adam(sched.learning_rate)

    @jax.jit  # one compile each (op by op, the four steps took ~40 s on CI's 2 cores)
    def step_chained(p, s):
      upd, s = tx.update(jax.grad(data_loss)(p), s, p)
      return optax.apply_updates(p, upd), s

    @jax.jit
    def step_reference(p, s, lam):
      g = jax.grad(lambda q: data_loss(q) + lam * lmkan.hessian_penalty(q))(p)
      upd, s = ref_tx.update(g, s, p)
      return optax.apply_updates(p, upd), s

    p1, s1 = params, tx.init(params)
    p2, s2 = params, ref_tx.init(params)
    for step in range(4):
      p1, s1 = step_chained(p1, s1)
      p2, s2 = step_reference(p2, s2, jnp.float64(lam0 * 10.0 ** (-dec * step / 10)))
    # atol: the schedule computes λ in float32 (relative 1e-7 off the float64 closed form), which Adam's
    # normalisation turns into ≤ 1.2e-9 in the parameters (measured); λ one step off moves them ~1e-4.
    for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p2)):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-8)
    assert not np.allclose(
      np.asarray(jax.tree.leaves(p1)[0]), np.asarray(jax.tree.leaves(params)[0])
    )
    with pytest.raises(ValueError, match="needs params"):
      tx.update(jax.grad(data_loss)(p1), s1)
    with pytest.raises(ValueError, match="hessian_lambda"):
      lmkan.add_hessian_penalty(-1.0)


def test_make_network_places_batchnorm_before_every_layer_and_is_the_trainer_builder():
  net = lmkan.make_network((5, 3), grid_size=4)
  x = jnp.asarray(np.random.default_rng(5).standard_normal((8, 6)) * 3.0 + 2.0, jnp.float32)
  v = net.init(jax.random.key(0), x)
  assert sorted(v["params"]) == ["lmkan_0", "lmkan_1"]  # BatchNorm has no scale / bias
  assert sorted(v["batch_stats"]) == ["bn_0", "bn_1"]
  # The first layer sees batch-normalised inputs: with affine tables it is exactly linear in them.
  w = np.random.default_rng(6).standard_normal((5, 6)).astype(np.float32)
  v["params"]["lmkan_0"]["table"] = lmkan.affine_table(jnp.asarray(w), lmkan.SigmaGrid(4))
  _, inter = net.apply(v, x, train=True, mutable=["batch_stats", "intermediates"])
  xn = (np.asarray(x) - np.asarray(x).mean(0)) / np.sqrt(np.asarray(x).var(0) + 1e-5)
  want_frac = np.mean(np.abs(xn) > np.log(4))
  assert float(inter["intermediates"]["lmkan_0"]["out_of_grid_frac"][0]) == pytest.approx(want_frac)
  # The trainer's regression models come from the same builder.
  cfg = default_config()
  assert lmkan_method.build_model(cfg) == lmkan.make_network((8, 8, 1), grid_size=8)
  cfg.lmkan.model = "mlp"
  assert lmkan_method.build_model(cfg) == lmkan.make_network((8, 8, 1), baseline=True)


def test_bf16_plain_optax_loop_learns_a_bilinear_target():
  # Target x1·x2 with x ~ N(0, I): every linear model has test MSE/Var exactly 1 (x1·x2 is uncorrelated
  # with 1, x1, x2). One lmKAN layer represents it exactly inside the grid (it is bilinear), so the recipe
  # in bf16 (BatchNorm → LMKANDense, f32 tables) must get far below 1. Measured at 300 steps, lr 0.1:
  # 0.0013 (f32 compute 0.0013); lr 1e-2 stays at 0.49 (Adam moves a table entry ≤ lr per step and the
  # target's corner entries are ≈ ln(8)² ≈ 4.3).
  net = lmkan.make_network((1,), grid_size=8, dtype=BF16)
  tx, _ = lmkan.recipe_optimizer(300, lr=0.1, lambda_decades=4.0)
  key = jax.random.key(7)
  v = net.init(key, jnp.zeros((2, 2)))
  params, stats = v["params"], v["batch_stats"]
  opt = tx.init(params)

  def loss(p, s, x, y):
    out, mut = net.apply({"params": p, "batch_stats": s}, x, train=True, mutable=["batch_stats"])
    return jnp.mean((out.astype(jnp.float32)[:, 0] - y) ** 2), mut["batch_stats"]

  @jax.jit
  def step(carry, k):
    p, s, o = carry
    x = jax.random.normal(k, (256, 2))
    (_, s), g = jax.value_and_grad(loss, has_aux=True)(p, s, x, x[:, 0] * x[:, 1])
    upd, o = tx.update(g, o, p)
    return (optax.apply_updates(p, upd), s, o), None

  (params, stats, _), _ = jax.lax.scan(step, (params, stats, opt), jax.random.split(key, 300))
  xt = jax.random.normal(jax.random.key(8), (4096, 2))
  yt = xt[:, 0] * xt[:, 1]
  pred = net.apply({"params": params, "batch_stats": stats}, xt).astype(jnp.float32)[:, 0]
  assert params["lmkan_0"]["table"].dtype == jnp.float32
  mse_over_var = float(jnp.mean((pred - yt) ** 2) / jnp.var(yt))
  assert mse_over_var < 0.02, mse_over_var

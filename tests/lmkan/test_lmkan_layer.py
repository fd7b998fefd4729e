"""LMKANDense: affine tables give the linear map through the layer (odd width), inits, impl switch,
layout converters, argument errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.lmkan.layer import (
  LMKANDense,
  affine_table,
  from_reference_layout,
  resolve_impl,
  to_reference_layout,
)


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def test_layer_affine_tables_equal_linear_map_odd_width_and_leading_dims():
  # Affine tables through the layer: N_in = 7 (odd, padded with a zero input), leading dims (2, 5), inputs N(0, 8²)
  # mostly outside the G = 6 grid. float64; tolerance as in test_lmkan_reference (rounding ~1e-14).
  grid = SigmaGrid(6)
  rng = np.random.default_rng(0)
  w = rng.standard_normal((3, 7))
  b = rng.standard_normal(3)
  x = jnp.asarray(rng.standard_normal((2, 5, 7)) * 8.0)
  m = LMKANDense(3, grid_size=6, impl="xla", param_dtype=jnp.float64)
  params = {"params": {"table": affine_table(jnp.asarray(w), grid, jnp.asarray(b))}}
  assert params["params"]["table"].shape == (4, 7, 7, 3)
  y, state = jax.jit(lambda v, xx: m.apply(v, xx, mutable=["intermediates"]))(params, x)
  assert y.shape == (2, 5, 3) and y.dtype == jnp.float64
  np.testing.assert_allclose(np.asarray(y), np.asarray(x) @ w.T + b, rtol=1e-10, atol=1e-9)
  frac = float(state["intermediates"]["out_of_grid_frac"][0])
  want = np.mean(np.abs(np.asarray(x)) > np.log(6))
  assert frac == pytest.approx(want)


def test_inits():
  # One compiled program builds both inits and evaluates the affine layer. Keys use the "rbg" PRNG:
  # threefry's XLA:CPU compile costs seconds, and the init math does not depend on the PRNG.
  x = jnp.asarray(np.random.default_rng(1).standard_normal((4, 10)))
  m = LMKANDense(6, grid_size=8, table_init="noise", init_scale=0.1, param_dtype=jnp.float64)
  ma = LMKANDense(6, grid_size=8, param_dtype=jnp.float64)  # the default init is affine
  x1, x2 = x * 5.0, jnp.flip(x, 0) * 3.0
  xs = jnp.stack([0.7 * x1 - 1.3 * x2, x1, x2, 0 * x])

  @jax.jit
  def run(k0, k1):
    va = ma.init(k1, x)
    return m.init(k0, x)["params"]["table"], jax.vmap(ma.apply, in_axes=(None, 0))(va, xs)

  t, y = run(jax.random.key(0, impl="rbg"), jax.random.key(1, impl="rbg"))
  # Noise init: U(±s/√N_in) with the true input width, independent entries.
  t = np.asarray(t)
  assert t.shape == (5, 9, 9, 6)
  bound = 0.1 / np.sqrt(10)
  assert (
    np.all(np.abs(t) <= bound) and np.abs(t).max() > 0.9 * bound and np.std(t) > 0.5 * bound / 2
  )
  # Affine init: the layer is exactly linear (no bias): y(a·x1 + b·x2) = a·y(x1) + b·y(x2) everywhere.
  np.testing.assert_allclose(
    np.asarray(y[0]), np.asarray(0.7 * y[1] - 1.3 * y[2]), rtol=1e-10, atol=1e-10
  )
  np.testing.assert_allclose(np.asarray(y[3]), 0.0, atol=1e-12)


def test_impl_switch():
  assert resolve_impl("xla") == "xla"
  assert resolve_impl("auto") == "xla"  # CPU
  assert resolve_impl("pallas") == "pallas"
  with pytest.raises(ValueError, match="impl must be one of"):
    resolve_impl("cuda")


def test_reference_layout_round_trip():
  t = jnp.asarray(np.random.default_rng(2).standard_normal((3, 5, 5, 4)))
  ref = to_reference_layout(t)
  assert ref.shape == (5, 5, 4, 3)  # [G+1, G+1, N_out, N_in/2]
  assert float(ref[1, 2, 3, 0]) == float(t[0, 1, 2, 3])
  np.testing.assert_array_equal(np.asarray(from_reference_layout(ref)), np.asarray(t))


@pytest.mark.parametrize(
  "kwargs, x_shape, match",
  [
    (dict(features=2, grid_size=2), (1, 4), "grid_size"),
    (dict(features=2, grid_size=8.0), (1, 4), "grid_size"),
    (dict(features=0), (1, 4), "features"),
    (dict(features=2, table_init="zeros"), (1, 4), "table_init"),
    (dict(features=2, param_dtype=jnp.int32), (1, 4), "param_dtype"),
    (dict(features=2, dtype=jnp.int8), (1, 4), "dtype must be float32"),
    (dict(features=2), (1, 0), "N_in"),
    (dict(features=2), (), "N_in"),
  ],
)
def test_invalid_layer_arguments_raise(kwargs, x_shape, match):
  with pytest.raises(ValueError, match=match):
    LMKANDense(**kwargs).init(jax.random.key(0), jnp.zeros(x_shape))


def test_integer_input_and_table_shape_mismatch_raise():
  with pytest.raises(ValueError, match="x must be floating"):
    LMKANDense(2).init(jax.random.key(0), jnp.zeros((1, 4), jnp.int32))
  m = LMKANDense(2, grid_size=4)
  bad = {"params": {"table": jnp.zeros((2, 6, 6, 2), jnp.float32)}}
  with pytest.raises(ValueError, match=r"table must have shape .*\(2, 5, 5, 2\)"):
    m.apply(bad, jnp.zeros((1, 4)))
  with pytest.raises(ValueError, match=r"weight must have shape \(N_out, N_in\)"):
    affine_table(jnp.zeros(3), SigmaGrid(4))

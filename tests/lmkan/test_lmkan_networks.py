"""Networks: BatchNorm(no affine) → LMKANDense stacks, the im2col lmKAN convolution, baselines' shapes.

Variables are built with numpy from `jax.eval_shape` (no PRNG compile); exact checks in float64 with
rounding-level tolerances (1e-10; the compared values are short sums of O(1–10) products).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.lmkan.layer import affine_table
from iclr26_jax.lmkan.networks import CNN, LMKANCNN, LMKANConv, LMKANNet, MLP, patches_kkc


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def test_patches_are_kh_kw_c_ordered():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 5, 6, 3))
  for padding, stride in (("VALID", 1), ("SAME", 2)):
    p = np.asarray(jax.jit(lambda v: patches_kkc(v, (3, 2), stride, padding))(jnp.asarray(x)))
    if padding == "SAME":
      # SAME with stride 2, window (3, 2): total padding H: max((ceil(5/2)−1)·2 + 3 − 5, 0) = 2 → (1, 1);
      # W: max((3−1)·2 + 2 − 6, 0) = 0.
      xp = np.pad(x, ((0, 0), (1, 1), (0, 0), (0, 0)))
    else:
      xp = x
    n, ho, wo, _ = p.shape
    want = np.zeros_like(p)
    for i in range(ho):
      for j in range(wo):
        win = xp[:, i * stride : i * stride + 3, j * stride : j * stride + 2, :]  # (N, kh, kw, C)
        want[:, i, j] = win.reshape(n, -1)  # (kh, kw, C) order, channel-minor
    np.testing.assert_array_equal(p, want)


def _variables(module, x, seed=0, **kwargs):
  """Variables of `module` built in numpy: params N(0, 0.3²), BatchNorm mean 0 and var 1."""
  shapes = jax.eval_shape(lambda: module.init(jax.random.key(0), x, **kwargs))
  rng = np.random.default_rng(seed)

  def fill(path, s):
    name = jax.tree_util.keystr(path)
    if "batch_stats" in name:
      return (
        jnp.zeros(s.shape, s.dtype) if name.endswith("['mean']") else jnp.ones(s.shape, s.dtype)
      )
    return jnp.asarray(rng.standard_normal(s.shape) * 0.3, s.dtype)

  return jax.tree_util.tree_map_with_path(fill, shapes)


def test_lmkan_conv_with_affine_tables_is_a_convolution():
  # A convolution is linear on (kh, kw, C) patch vectors; with the affine tables of its kernel the lmKAN
  # convolution equals it exactly, including SAME padding and an odd patch width (3·3·3 = 27).
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.standard_normal((2, 6, 6, 3)) * 3.0)
  kernel = rng.standard_normal((3, 3, 3, 4))  # HWIO
  grid = SigmaGrid(4)
  conv = LMKANConv(4, kernel_size=3, padding="SAME", grid_size=4, param_dtype=jnp.float64)
  variables = {
    "params": {"lmkan": {"table": affine_table(jnp.asarray(kernel.reshape(27, 4).T), grid)}},
    "batch_stats": {"bn": {"mean": jnp.zeros(3), "var": jnp.ones(3)}},
  }
  y = jax.jit(lambda v, xx: conv.apply(v, xx, train=False))(variables, x)
  # Eval-mode BatchNorm with mean 0, var 1: x / √(1 + eps).
  xn = x / np.sqrt(1.0 + 1e-5)
  want = jax.lax.conv_general_dilated(
    xn,
    jnp.asarray(kernel),
    (1, 1),
    "SAME",
    dimension_numbers=("NHWC", "HWIO", "NHWC"),
    precision=jax.lax.Precision.HIGHEST,
  )
  assert y.shape == (2, 6, 6, 4)
  np.testing.assert_allclose(np.asarray(y), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_lmkan_net_batchnorm_has_no_affine_and_uses_batch_statistics():
  # One layer with affine tables: in training mode y = ((x − mean_B)/√(var_B + eps))·Wᵀ exactly, BN has
  # no parameters, and the running statistics move with Flax momentum 0.9 (PyTorch's 0.1).
  rng = np.random.default_rng(2)
  x = jnp.asarray(rng.standard_normal((32, 6)) * 2.0 + 1.0)
  w = rng.standard_normal((3, 6))
  net = LMKANNet((3,), grid_size=8, param_dtype=jnp.float64)
  variables = _variables(net, x)
  assert set(variables["params"]) == {"lmkan_0"}  # no BatchNorm scale or bias
  variables["params"]["lmkan_0"]["table"] = affine_table(jnp.asarray(w), SigmaGrid(8))
  y, state = jax.jit(lambda v, xx: net.apply(v, xx, train=True, mutable=["batch_stats"]))(
    variables, x
  )
  xn = np.asarray(x)
  mean, var = xn.mean(0), xn.var(0)
  np.testing.assert_allclose(
    np.asarray(y), ((xn - mean) / np.sqrt(var + 1e-5)) @ w.T, rtol=1e-10, atol=1e-10
  )
  np.testing.assert_allclose(
    np.asarray(state["batch_stats"]["bn_0"]["mean"]), 0.1 * mean, rtol=1e-6
  )


def test_network_output_shapes_and_parameter_layout():
  # Shapes only (eval_shape traces every layer without compiling).
  img = jax.ShapeDtypeStruct((2, 8, 8, 1), jnp.float32)
  vec = jax.ShapeDtypeStruct((5, 12), jnp.float32)
  key = jax.random.key(0)
  for model, x, out in [
    (LMKANCNN((4, 6), (10,), grid_size=4), img, (2, 10)),
    (CNN((4, 6), (10,)), img, (2, 10)),
    (LMKANNet((8, 8, 1)), vec, (5, 1)),
    (MLP((16, 16, 1)), vec, (5, 1)),
  ]:
    y, _ = jax.eval_shape(lambda xx, m=model: m.init_with_output(key, xx), x)
    assert y.shape == out
  cnn = LMKANCNN((4, 6), (10,), grid_size=4)
  shapes = jax.eval_shape(lambda xx: cnn.init(key, xx), img)["params"]
  # conv_0: 1·9 = 9 inputs → 5 pairs; conv_1: 4·9 = 36 → 18 pairs; head: 2·2·6 = 24 → 12 pairs.
  assert shapes["conv_0"]["lmkan"]["table"].shape == (5, 5, 5, 4)
  assert shapes["conv_1"]["lmkan"]["table"].shape == (18, 5, 5, 6)
  assert shapes["head"]["lmkan_0"]["table"].shape == (12, 5, 5, 10)


def test_network_argument_errors():
  key = jax.random.key(0)
  vec = jax.ShapeDtypeStruct((2, 4), jnp.float32)
  img = jax.ShapeDtypeStruct((1, 4, 4, 1), jnp.float32)
  with pytest.raises(ValueError, match="widths"):
    jax.eval_shape(lambda xx: LMKANNet(()).init(key, xx), vec)
  with pytest.raises(ValueError, match="pool"):
    jax.eval_shape(lambda xx: CNN((2,), (3,), pool="median").init(key, xx), img)
  with pytest.raises(ValueError, match=r"x must have shape \(N, H, W, C\)"):
    jax.eval_shape(lambda xx: LMKANConv(2).init(key, xx), vec)

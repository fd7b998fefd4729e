"""iclr26_jax.nn: the shared MLP and time embeddings, and the method packages' networks built on them.

Every network that moved onto ``nn.mlp`` is checked against an inline oracle: a module written
here with explicit ``nn.Dense`` lines, the structure each network had before the move. Same key, same
input: the parameter trees and the init values and outputs must be equal to the bit (Flax derives
init keys from module paths, so a renamed or re-nested layer changes them and fails the test).
The embeddings are checked against numpy float64 formulas.
"""

import ast
import functools
import math
import pathlib
import subprocess
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

import iclr26_jax.nn as inn
from experiments import anybcq_digits as digits_eval
from experiments import toy
from iclr26_jax.dsb.solvers import csbm
from iclr26_jax.minpv import networks as minpv_networks
from iclr26_jax.pdns import continuous, discrete, egnn
from iclr26_jax.qam import networks as qam_networks

KEY = jax.random.PRNGKey(7)
X = jax.random.normal(jax.random.PRNGKey(1), (3, 5))
T = jnp.array([0.1, 0.5, 0.9])
Z = jnp.array([[0, 1, 3, 2], [3, 3, 0, 1], [2, 0, 1, 3]])  # (B, D) states with mask symbol q = 3


def _assert_same(new, ref, *args):
  """``new`` and ``ref`` give the same parameter tree, parameters and outputs, bit for bit."""
  p_new, p_ref = new.init(KEY, *args), ref.init(KEY, *args)
  out_new, out_ref = new.apply(p_new, *args), ref.apply(p_ref, *args)
  f_new, f_ref = traverse_util.flatten_dict(p_new), traverse_util.flatten_dict(p_ref)
  assert sorted(f_new) == sorted(f_ref)
  for path in f_ref:
    assert f_new[path].dtype == f_ref[path].dtype, path
    np.testing.assert_array_equal(f_new[path], f_ref[path], err_msg=str(path))
  for a, b in zip(jax.tree_util.tree_leaves(out_new), jax.tree_util.tree_leaves(out_ref)):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
  return f_new


# ----------------------------------------------------------------------------- inline oracles
class _QamRef(nn.Module):
  compute_dtype: str

  @nn.compact
  def __call__(self, x):
    init = nn.initializers.xavier_uniform()
    x = nn.LayerNorm()(nn.gelu(qam_networks.dense(8, self.compute_dtype, kernel_init=init)(x)))
    x = nn.LayerNorm()(nn.gelu(qam_networks.dense(6, self.compute_dtype, kernel_init=init)(x)))
    return qam_networks.dense(4, self.compute_dtype, kernel_init=init)(x)


class _ToyRef(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(8)(x))
    x = nn.relu(nn.Dense(4)(x))
    return nn.Dense(1)(x)[..., 0]


class _ControlRef(nn.Module):
  @nn.compact
  def __call__(self, t, x):
    tt = jnp.broadcast_to(jnp.asarray(t, x.dtype), (x.shape[0],))[:, None]
    freqs = (2.0 ** jnp.arange(3, dtype=x.dtype)) * math.pi
    h = jnp.concatenate([x, tt, jnp.sin(tt * freqs), jnp.cos(tt * freqs)], -1)
    h = nn.silu(nn.Dense(8)(h))
    h = nn.silu(nn.Dense(8)(h))
    return nn.Dense(5, kernel_init=nn.initializers.zeros, bias_init=nn.initializers.zeros)(h)


class _DenoiserRef(nn.Module):
  @nn.compact
  def __call__(self, z):
    h = jax.nn.one_hot(z, 4, dtype=jnp.float32).reshape(z.shape[0], -1)
    h = nn.silu(nn.Dense(8)(h))
    logits = nn.Dense(4 * 3, kernel_init=nn.initializers.zeros, bias_init=nn.initializers.zeros)(h)
    return jax.nn.log_softmax(logits.reshape(-1, 4, 3), -1)


class _EgnnMlpRef(nn.Module):
  zero_last: bool

  @nn.compact
  def __call__(self, h):
    h = nn.silu(nn.Dense(8)(h))
    init = nn.initializers.zeros if self.zero_last else nn.initializers.lecun_normal()
    return nn.Dense(2, kernel_init=init, bias_init=nn.initializers.zeros)(h)


class _DigitsRef(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(8, name="fc0")(x))
    x = nn.relu(nn.Dense(8, name="fc1")(x))
    return nn.Dense(10, name="fc2")(x)


class _CsbmRef(nn.Module):
  @nn.compact
  def __call__(self, x, t):
    emb = nn.Embed(3, 4, name="time_embedding")(t)
    h = jnp.concatenate([x.astype(jnp.float32), emb.astype(jnp.float32)], axis=-1)
    # CSBM initialises its layers as torch's nn.Linear does: same variables as nn.Dense.
    from iclr26_jax.dsb.solvers.csbm import TorchLinear as Dense

    h = nn.relu(Dense(8, name="hidden_0")(h))
    h = nn.relu(Dense(8, name="hidden_1")(h))
    return Dense(4 * 5, name="logits")(h).reshape(x.shape[0], 4, 5)


def _sin_emb(t, n, scale):
  """The old MinPV embedding, inline."""
  half = n // 2
  freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
  args = scale * t[:, None].astype(jnp.float32) * freqs[None, :]
  return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=1)


class _ScoreRef(nn.Module):
  """MinPV ScoreNetwork(dim=5, width=8, depth=1, time_features=4, data_head=True)."""

  @nn.compact
  def __call__(self, x, t):
    act = lambda h: nn.leaky_relu(h, 0.01)
    emb = nn.Dense(8, name="time_in")(_sin_emb(t, 4, 1000.0))
    emb = nn.Dense(8, name="time_out")(nn.silu(emb))
    h = nn.Dense(8, name="x_in")(x)
    r = nn.Dense(8, name="block_0_a")(act(nn.LayerNorm(name="norm_0")(h)))
    r = r + nn.Dense(8, name="block_0_t")(nn.silu(emb))
    h = h + nn.Dense(8, name="block_0_b")(act(r))
    h = act(nn.LayerNorm(name="norm_out")(h))
    return nn.Dense(1, name="time_head")(h)[:, 0], nn.Dense(5, name="data_head")(h)


class _QuadraticRef(nn.Module):
  """MinPV QuadraticTimeScore(dim=5, width=8, time_features=4, data_head=True)."""

  @nn.compact
  def __call__(self, x, t):
    w = self.param("w", lambda key, shape: jnp.eye(shape[0]), (5, 5))
    y = x @ w.T
    h = nn.silu(nn.Dense(8, name="t_in")(_sin_emb(t, 4, 30.0)))
    h = nn.silu(nn.Dense(8, name="t_hidden")(h))
    coef = nn.Dense(11, name="t_out", kernel_init=nn.initializers.zeros)(h)
    return coef[:, 0] + jnp.sum(coef[:, 1:6] * y**2, axis=1), -(coef[:, 6:] * y) @ w


# ------------------------------------------------------ method packages' networks vs oracles
@pytest.mark.parametrize("compute_dtype", ["float32", "bfloat16"])
def test_qam_mlp_matches_inline_reference(compute_dtype):
  net = qam_networks.MLP((8, 6), 4, layer_norm=True, compute_dtype=compute_dtype)
  flat = _assert_same(net, _QamRef(compute_dtype), X)
  assert ("params", "LayerNorm_1", "scale") in flat and ("params", "Dense_2", "kernel") in flat


def test_toy_mlp_matches_inline_reference():
  _assert_same(toy.MLP((8, 4)), _ToyRef(), X)


def test_pdns_control_and_denoiser_match_inline_references():
  # t as a scalar (the rollout) and as (B,) (the bridge-matching loss).
  _assert_same(continuous.ControlNet(dim=5, hidden=8, depth=2, num_freqs=3), _ControlRef(), 0.3, X)
  _assert_same(continuous.ControlNet(dim=5, hidden=8, depth=2, num_freqs=3), _ControlRef(), T, X)
  _assert_same(discrete.DenoiserNet(dim=4, q=3, hidden=8, depth=1), _DenoiserRef(), Z)


@pytest.mark.parametrize("zero_last", [False, True])
def test_egnn_mlp_matches_inline_reference(zero_last):
  _assert_same(egnn._MLP(8, 2, zero_last=zero_last), _EgnnMlpRef(zero_last), X)


def test_anybcq_digits_and_dsb_csbm_keep_their_layer_names():
  flat = _assert_same(digits_eval.MLP(hidden=8), _DigitsRef(), X)
  assert {p[1] for p in flat} == set(digits_eval.LAYERS)  # quantization finds them by name
  net = csbm.SimpleMLP(dim=4, num_categories=5, num_times=3, hidden=8, num_layers=2)
  _assert_same(net, _CsbmRef(), Z, jnp.array([0, 2, 1]))


def test_minpv_networks_match_inline_references():
  net = minpv_networks.ScoreNetwork(dim=5, width=8, depth=1, time_features=4, data_head=True)
  _assert_same(net, _ScoreRef(), X, T)
  quad = minpv_networks.QuadraticTimeScore(dim=5, width=8, time_features=4, data_head=True)
  _assert_same(quad, _QuadraticRef(), X, T)


# ---------------------------------------------------------------------------- nn.mlp itself
def test_mlp_module_nests_one_level_and_names_and_inits_apply():
  net = inn.MLP(
    (6,),
    3,
    activation=nn.tanh,
    out_kernel_init=nn.initializers.zeros,
    out_bias_init=nn.initializers.ones,
    names=("a", "b"),
  )
  params = net.init(KEY, X)["params"]
  assert set(params) == {"a", "b"} and params["a"]["kernel"].shape == (5, 6)
  np.testing.assert_array_equal(net.apply({"params": params}, X), np.ones((3, 3), np.float32))

  class Outer(nn.Module):
    @nn.compact
    def __call__(self, x):
      return inn.MLP((4,), 2, activation=nn.relu)(x)

  flat = traverse_util.flatten_dict(jax.eval_shape(Outer().init, KEY, X))
  assert {"/".join(p) for p in flat} == {
    f"params/MLP_0/Dense_{i}/{w}" for i in (0, 1) for w in ("kernel", "bias")
  }


def test_mlp_dense_factory_and_errors():
  net = inn.MLP((4,), 2, activation=nn.relu, dense=functools.partial(nn.Dense, use_bias=False))
  params = net.init(KEY, X)["params"]
  assert set(params["Dense_0"]) == {"kernel"} and set(params["Dense_1"]) == {"kernel"}
  with pytest.raises(ValueError, match="names"):
    inn.MLP((4,), 2, activation=nn.relu, names=("only_one",)).init(KEY, X)
  with pytest.raises(ValueError, match="widths"):
    inn.MLP((0,), 2, activation=nn.relu).init(KEY, X)
  with pytest.raises(ValueError, match="feature axis"):
    inn.MLP((4,), 2, activation=nn.relu).init(KEY, jnp.float32(1.0))


# ------------------------------------------------------------------------------ embeddings
def test_sinusoidal_embedding_matches_numpy_formula():
  t = np.array([0.0, 0.013, 0.5, 1.0], np.float32)
  got = np.asarray(inn.sinusoidal_embedding(jnp.asarray(t), 6, scale=30.0))
  k = np.arange(3)
  args = 30.0 * t[:, None].astype(np.float64) * 10000.0 ** (-k / 3.0)
  np.testing.assert_allclose(got, np.concatenate([np.sin(args), np.cos(args)], 1), atol=2e-5)
  assert minpv_networks.sinusoidal_embedding is inn.sinusoidal_embedding
  with pytest.raises(ValueError, match="num_features"):
    inn.sinusoidal_embedding(jnp.ones(3), 5)
  with pytest.raises(ValueError, match="t must be"):
    inn.sinusoidal_embedding(jnp.ones((3, 1)), 4)


def test_fourier_time_features_match_numpy_formula():
  t = np.array([0.0, 0.25, 0.7], np.float32)
  got = np.asarray(inn.fourier_time_features(jnp.asarray(t), 3, 2, jnp.float32))
  a = np.pi * t[:, None].astype(np.float64) * np.array([1.0, 2.0])
  np.testing.assert_allclose(got, np.concatenate([t[:, None], np.sin(a), np.cos(a)], 1), atol=1e-6)
  scalar = inn.fourier_time_features(0.25, 3, 2, jnp.float32)  # one t for the whole batch
  np.testing.assert_array_equal(scalar, np.broadcast_to(got[1], (3, 5)))
  with pytest.raises(ValueError, match="t must be"):
    inn.fourier_time_features(jnp.ones(4), 3, 2, jnp.float32)


# -------------------------------------------------------------------------------- layering
def test_nn_imports_no_method_and_its_package_no_jax():
  """nn is a floor under the method packages: it imports nothing of iclr26_jax but ``_lazy`` and itself."""
  root = pathlib.Path(inn.__file__).parent
  for path in root.glob("*.py"):
    for node in ast.walk(ast.parse(path.read_text())):
      mods = (
        [a.name for a in node.names]
        if isinstance(node, ast.Import)
        else [node.module]
        if isinstance(node, ast.ImportFrom) and node.module
        else []
      )
      for m in mods:
        if m.startswith("iclr26_jax"):
          assert m == "iclr26_jax._lazy" or m.startswith("iclr26_jax.nn"), (path.name, m)
  assert sorted(inn.__all__) == sorted(inn._EXPORTS)
  code = "import sys, iclr26_jax.nn; print(sorted(m for m in ('jax', 'flax') if m in sys.modules))"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "[]", out.stdout

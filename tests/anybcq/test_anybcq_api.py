"""The AnyBCQ entry points on a Flax param tree: ``quantize_params`` / ``dequantize_params``.

Oracles: the per-matrix quantizer ``anybcq.quantize`` applied by hand to the transposed (and, for
widths that need it, explicitly zero-padded) kernel; the BCQ level count (a p-bit group takes at
most 2^p distinct values along its inputs); the dequantized dense matmul for the packed path.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax import anybcq

BITS = (2, 3, 4)
T = 4  # refinement rounds: small, shared by every call here (one compile per shape)
IN = 50  # not a multiple of 32: the kernels are zero-padded along K


class MLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(96, name="hidden")(x))
    return nn.Dense(5, name="out")(x)


@pytest.fixture(scope="module")
def mlp():
  x = jax.random.normal(jax.random.key(0), (64, IN))
  params = MLP().init(jax.random.key(1), x)
  q = anybcq.quantize_params(params, bits=BITS, rounds=T)
  return x, params, q


def test_round_trip_structure_shapes_dtypes(mlp):
  _, params, q = mlp
  assert q.paths == [("params", "hidden", "kernel"), ("params", "out", "kernel")]
  # K = 50 < g = 128: one group of 64 (the power of two >= 50), K_q = 64; K = 96: g = K_q = 128
  assert [q.weights[p].shape for p in q.paths] == [(96, 64), (5, 128)]
  assert [q.weights[p].group_size for p in q.paths] == [64, 128]
  for p in BITS:
    tree = anybcq.dequantize_params(q, p)
    assert jax.tree.structure(tree) == jax.tree.structure(params)
    shapes = jax.tree.map(lambda a: (a.shape, a.dtype), tree)
    assert shapes == jax.tree.map(lambda a: (a.shape, a.dtype), params)
    # biases stay the original objects, kernels change
    assert tree["params"]["hidden"]["bias"] is params["params"]["hidden"]["bias"]
    assert not np.array_equal(tree["params"]["out"]["kernel"], params["params"]["out"]["kernel"])


def test_error_falls_with_bits(mlp):
  x, params, q = mlp
  y = MLP().apply(params, x)
  errs = [
    float(jnp.linalg.norm(MLP().apply(anybcq.dequantize_params(q, p), x) - y) / jnp.linalg.norm(y))
    for p in BITS
  ]
  # Each added plane is an LS refit over a superset of codes: the error must fall at every width.
  # Gaussian-like weights: 2-bit BCQ keeps ~12 % relative weight error, each bit roughly halves it.
  assert errs[0] > errs[1] > errs[2], errs
  assert errs[2] < 0.5 * errs[0] and errs[0] < 0.5, errs


def test_padding_matches_the_quantizer_on_the_explicitly_padded_transpose(mlp):
  _, params, q = mlp
  kernel = np.asarray(params["params"]["hidden"]["kernel"])  # (K, N) = (50, 96)
  w = np.zeros((96, 64), np.float32)
  w[:, :IN] = kernel.T
  want = anybcq.quantize(w, BITS, 64, T, asymmetric=True)
  for p in BITS:
    got = np.asarray(q.kernel(("params", "hidden"), p))
    np.testing.assert_array_equal(got, np.asarray(want.dequantize(p))[:, :IN].T)


def test_flax_layout_groups_run_along_inputs():
  # A (K, N) = (256, 8) Flax kernel, g = 128: no padding, so ``quantize_params`` must equal
  # the quantizer on kernel.T exactly, and every (output, input group) takes <= 2^p values.
  kernel = jax.random.normal(jax.random.key(3), (256, 8))
  params = {"params": {"dense": {"kernel": kernel, "bias": jnp.zeros(8)}}}
  q = anybcq.quantize_params(params, bits=(1, 2), group_size=128, rounds=T)
  ref = anybcq.quantize(np.asarray(kernel).T, (1, 2), 128, T)
  for p in (1, 2):
    k_hat = np.asarray(anybcq.dequantize_params(q, p)["params"]["dense"]["kernel"])
    np.testing.assert_array_equal(k_hat, np.asarray(ref.dequantize(p)).T)
    groups = k_hat.reshape(2, 128, 8)  # (group, inputs in the group, output)
    counts = [len(np.unique(groups[gi, :, n])) for gi in range(2) for n in range(8)]
    assert max(counts) <= 2**p
  # quantizing the (in, out) matrix as if it were (out, in) groups along outputs: over the 128
  # inputs of one group and one output it then takes far more than 2 values
  wrong = np.asarray(anybcq.quantize(np.asarray(kernel), (1,), 8, T).dequantize(1))  # (256, 8)
  assert len(np.unique(wrong[:128, 0])) > 2


def test_packed_path_equals_dequantized_path(mlp):
  x, params, q = mlp
  for path in (("params", "hidden"), ("params", "out")):
    k = q.in_features[path + ("kernel",)]
    xs = x[:8, :k] if k == IN else jax.random.normal(jax.random.key(4), (8, k))
    bias = get_bias(params, path)
    for p in BITS:
      y = np.asarray(q.apply_dense(path, xs, p, impl="xla"), np.float64)
      want = np.asarray(xs, np.float64) @ np.asarray(q.kernel(path, p), np.float64) + bias
      # f32 matmul over K <= 128 terms of size ~1: errors ~1e-6
      np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
  variables = q.dense_variables("params/hidden")
  assert variables["bitplanes"]["planes"].shape == (4, 256 // 32, 96)  # K_q = 64 -> K_pad 256
  assert "beta" in variables["params"] and "bias" in variables["params"]


def get_bias(params, path):
  return np.asarray(params["params"][path[1]]["bias"], np.float64)


def test_filter_regex_and_callable(mlp):
  _, params, _ = mlp
  only = anybcq.quantize_params(params, bits=BITS, rounds=T, filter=r"hidden/kernel$")
  assert only.paths == [("params", "hidden", "kernel")]
  tree = only.dequantize(2)
  assert tree["params"]["out"]["kernel"] is params["params"]["out"]["kernel"]
  same = anybcq.kernel_paths(params, lambda path, leaf: path[-2] == "hidden" and leaf.ndim == 2)
  assert same == only.paths


def test_bad_inputs(mlp):
  _, params, q = mlp
  with pytest.raises(ValueError, match="no leaf selected"):
    anybcq.quantize_params(params, filter="nothing_matches")
  with pytest.raises(ValueError, match="cannot be quantized"):
    anybcq.quantize_params(params, filter=lambda path, leaf: path[-1] == "bias")
  with pytest.raises(ValueError, match="stored precisions"):
    anybcq.dequantize_params(q, 5)
  with pytest.raises(ValueError, match="not a quantized kernel"):
    q.kernel(("params", "nope"), 2)
  with pytest.raises(ValueError, match=r"x must be \(\.\.\., K\) with K = 50"):
    q.apply_dense(("params", "hidden"), jnp.ones((2, 64)), 2)
  with pytest.raises(ValueError, match="QuantizedParams"):
    anybcq.dequantize_params(params, 2)
  bad = jax.tree.map(lambda a: a, params)
  bad["params"]["out"]["kernel"] = bad["params"]["out"]["kernel"].at[0, 0].set(jnp.nan)
  with pytest.raises(ValueError, match="params/out/kernel.*non-finite"):
    anybcq.quantize_params(bad, bits=BITS, rounds=T)


def test_integer_kernel_is_cast_to_float():
  """An integer kernel is quantized and dequantized as float32 (a kernel of ones is exactly
  representable at every precision: one scale per group, all signs +1), never truncated."""
  params = {"params": {"dense": {"kernel": jnp.ones((64, 8), jnp.int32), "bias": jnp.zeros(8)}}}
  q = anybcq.quantize_params(params, bits=(2, 3), rounds=4)
  for b in (2, 3):
    k = anybcq.dequantize_params(q, b)["params"]["dense"]["kernel"]
    assert k.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(k), 1.0, rtol=1e-6)


class _ConvNet(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Conv(16, (3, 3))(x))
    return nn.Dense(4)(x.reshape(x.shape[0], -1))


def test_conv_kernels_are_quantized_as_patch_matrices():
  """Default selection takes Conv kernels too; the oracle: the same kernel reshaped by hand to its
  (kh·kw·C_in, C_out) patch matrix and quantized as a Dense kernel gives the same values."""
  params = _ConvNet().init(jax.random.key(0), jnp.ones((1, 6, 6, 8)))
  q = anybcq.quantize_params(params, bits=(2, 4), rounds=4, group_size=64)
  conv = ("params", "Conv_0", "kernel")
  assert conv in q.paths and ("params", "Dense_0", "kernel") in q.paths
  k = params["params"]["Conv_0"]["kernel"]  # (3, 3, 8, 16)
  by_hand = anybcq.quantize_params(
    {"w": {"kernel": k.reshape(72, 16)}}, bits=(2, 4), rounds=4, group_size=64
  )
  errs = []
  for b in (2, 4):
    got = q.dequantize(b)["params"]["Conv_0"]["kernel"]
    assert got.shape == k.shape and got.dtype == k.dtype
    want = by_hand.dequantize(b)["w"]["kernel"].reshape(k.shape)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    errs.append(float(jnp.linalg.norm(got - k) / jnp.linalg.norm(k)))
  assert errs[1] < errs[0] < 1.0
  with pytest.raises(ValueError, match="Conv kernel"):
    q.dense_module(conv)


def test_filter_selecting_a_vector_names_it():
  params = _ConvNet().init(jax.random.key(0), jnp.ones((1, 6, 6, 8)))
  with pytest.raises(
    ValueError, match=r"params/Dense_0/bias of shape \(4,\), which cannot be quantized"
  ):
    anybcq.quantize_params(params, bits=(2,), filter="Dense_0")


def test_row_blocks_give_the_planes_and_scales_of_one_call(monkeypatch):
  # A kernel (K 64, N 40) quantized in blocks of 16 rows (3 calls, the last of 8 rows) against
  # the quantizer on the whole transposed matrix: every (row, group) is fitted on its own.
  from iclr26_jax.anybcq import tree

  kernel = np.asarray(jax.random.normal(jax.random.key(3), (64, 40)), np.float32)
  monkeypatch.setattr(tree, "_BLOCK_WEIGHTS", 16 * 64)
  q = anybcq.quantize_params({"kernel": kernel}, bits=BITS, rounds=T, group_size=32)
  want = anybcq.quantize(kernel.T, BITS, 32, T, True)
  got = q.weights[("kernel",)]
  np.testing.assert_array_equal(np.asarray(got.signs), np.asarray(want.signs))
  for a, b in zip(got.alphas + got.betas, want.alphas + want.betas):  # XLA's vector code differs
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)  # by shape


def test_ctrl_c_stops_quantize_params_between_row_blocks(monkeypatch):
  # One 4096 x 4096 kernel at the defaults (~13 s of work on a laptop core): SIGINT lands between
  # row blocks of about 1.5 s. As one call, Python saw the signal at its next sync but the
  # dispatched work ran on for ~8 s, so the next JAX operation (or the process exit) waited
  # for it: the time measured is the signal to a tiny operation done after the interrupt.
  import os
  import signal
  import threading
  import time

  from iclr26_jax.anybcq import tree

  # Blocks of 512 K weights (a quarter of the default): short even where XLA compiles at -O0
  # on a loaded host, as the test tier does.
  monkeypatch.setattr(tree, "_BLOCK_WEIGHTS", 1 << 19)
  kernel = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
  sent = []

  def interrupt():
    sent.append(time.time())
    os.kill(os.getpid(), signal.SIGINT)

  timer = threading.Timer(8.0, interrupt)  # after the compile, in the work (a loaded host too)
  timer.start()
  try:
    with pytest.raises(KeyboardInterrupt):
      anybcq.quantize_params({"kernel": kernel})
  finally:
    timer.cancel()
  jax.block_until_ready(jnp.ones(3) * 2.0)
  assert sent and time.time() - sent[0] < 5.0  # one or two blocks, with slack for load


def test_whole_model_forward_on_packed_weights(mlp, monkeypatch):
  # Oracle: the same model on the dequantized tree; every quantized Dense went through the
  # packed bit-plane path (counted), for the full variables and for the inner params dict.
  x, params, q = mlp
  calls = []
  packed = anybcq.QuantizedParams.apply_dense
  monkeypatch.setattr(
    anybcq.QuantizedParams,
    "apply_dense",
    lambda self, path, *a, **k: calls.append(path) or packed(self, path, *a, **k),
  )
  for b in BITS:
    y = q.apply(MLP(), x, bits=b)
    ref = MLP().apply(anybcq.dequantize_params(q, b), x)
    np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-5, atol=1e-5)
  assert calls == [("params", "hidden", "kernel"), ("params", "out", "kernel")] * len(BITS)
  inner = anybcq.quantize_params(params["params"], bits=BITS, rounds=T)
  calls.clear()
  y = inner.apply(MLP(), x, bits=2)
  ref = MLP().apply({"params": anybcq.dequantize_params(inner, 2)}, x)
  np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-5, atol=1e-5)
  assert calls == [("hidden", "kernel"), ("out", "kernel")]
  with pytest.raises(ValueError, match="bits must be one of the stored precisions"):
    q.apply(MLP(), x, bits=8)

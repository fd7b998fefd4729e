"""AnyBCQ storage, QuantizedDense and memory accounting (Park et al., ICLR 2026;
github.com/naver-aics/anybcq).

Oracles: float64 einsums of the dequantized weight and dense matmuls, exact pack/unpack round trips,
the array sizes of the packed format, and the arithmetic of the paper's Table 1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax import anybcq
from experiments import anybcq_table1 as table1_lib
from kernels_pallas.bitplane_matmul import format as bp_format

N, K, G = 32, 256, 64
T = 8


@pytest.fixture(scope="module", params=[False, True], ids=["sym", "asym"])
def qw(request):
  w = np.random.default_rng(0).standard_normal((N, K)).astype(np.float32)
  return anybcq.quantize(w, (2, 3, 4), G, T, request.param)


def _dequant_oracle(qw, p):
  s = np.asarray(qw.planes(p), np.float64).reshape(p, N, -1, G)
  w = np.einsum("pngk,ngp->ngk", s, np.asarray(qw.alpha(p), np.float64))
  if qw.asymmetric:
    w = w + np.asarray(qw.beta(p), np.float64)[..., None]
  return w.reshape(N, K)


def test_dequantize_matches_float64_oracle(qw):
  for p in qw.bits:
    # float32 sum of p + 1 terms of size <= ~3: a few f32 ulps
    np.testing.assert_allclose(
      np.asarray(qw.dequantize(p)), _dequant_oracle(qw, p), rtol=0, atol=1e-6
    )
    planes = np.asarray(qw.planes(p))
    assert planes.shape == (p, N, K) and planes.dtype == np.int8
    assert set(np.unique(planes)) <= {-1, 1}


def test_packed_round_trip(qw):
  packed = qw.to_packed()
  assert packed.planes.dtype == jnp.uint32 and packed.planes.shape == (4, K // 32, N)
  assert packed.alpha.shape == (9, K // G, N)
  assert (packed.beta is None) == (not qw.asymmetric)
  # planes: kernel's (K, N) convention
  unpacked = np.asarray(bp_format.unpack_planes(packed.planes, k=K))
  np.testing.assert_array_equal(unpacked, np.transpose(np.asarray(qw.signs), (0, 2, 1)))
  # alpha rows offset(p) + b hold alpha^(p)_b
  for p, off in zip(qw.bits, bp_format.plane_offsets(qw.bits)):
    np.testing.assert_array_equal(
      np.asarray(packed.alpha[off : off + p]), np.transpose(np.asarray(qw.alpha(p)), (2, 1, 0))
    )
  back = anybcq.QuantizedWeight.from_packed(packed)
  assert back.bits == qw.bits and back.group_size == qw.group_size
  for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(qw)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_packed_round_trip_padded_k():
  # K = 384 pads to K_pad = 512 with zero scales in the padded groups.
  w = np.random.default_rng(1).standard_normal((8, 384)).astype(np.float32)
  q = anybcq.quantize(w, (1, 2), 128, 2, asymmetric=False)
  packed = q.to_packed()
  assert packed.planes.shape == (2, 512 // 32, 8) and packed.alpha.shape == (3, 4, 8)
  assert np.all(np.asarray(packed.alpha[:, 3:]) == 0) and packed.beta is None
  back = anybcq.QuantizedWeight.from_packed(packed)
  for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(q)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_quantized_dense_matches_dequantized_matmul(qw):
  x = np.random.default_rng(2).standard_normal((3, 5, K)).astype(np.float32)
  bias = np.linspace(-1, 1, N).astype(np.float32)
  layer = anybcq.QuantizedDense(
    features=N, bits=(2, 3, 4), group_size=G, asymmetric=qw.asymmetric, use_bias=True, impl="xla"
  )
  shapes = jax.eval_shape(lambda: layer.init(jax.random.key(0), x, 2))
  variables = anybcq.dense_variables(qw, bias)
  # dense_variables has exactly the layer's variable structure, shapes and dtypes
  assert jax.tree_util.tree_map(lambda a: (a.shape, a.dtype), variables) == jax.tree_util.tree_map(
    lambda a: (a.shape, a.dtype), shapes
  )
  apply = jax.jit(layer.apply)
  x64 = x.astype(np.float64)
  for p in (2, 3, 4):
    y = np.asarray(apply(variables, x, p))
    want = x64 @ np.asarray(qw.dequantize(p), np.float64).T + bias
    # f32 HIGHEST matmul over K = 256 terms of size ~ 1: |err| <~ sqrt(K) * 2^-24 * sum|x w|
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
  # per-row precisions: every row equals its single-precision call
  prec = np.array([[2, 3, 4, 2, 4]] * 3, np.int32)
  y_mixed = np.asarray(layer.apply(variables, x, prec))
  for p in (2, 3, 4):
    np.testing.assert_allclose(
      y_mixed[prec == p], np.asarray(apply(variables, x, p))[prec == p], rtol=1e-6, atol=1e-6
    )
  with pytest.raises(ValueError, match="out of range"):
    layer.apply(variables, x, 5)
  with pytest.raises(ValueError, match="multiple of group_size"):
    layer.apply(variables, x[..., :96], 2)


def test_quantized_dense_pallas_interpret(qw):
  # impl is forwarded: the Pallas kernel (interpret mode on CPU) agrees with the XLA path.
  x = np.random.default_rng(3).standard_normal((8, K)).astype(np.float32)
  variables = anybcq.dense_variables(qw)
  common = dict(features=N, bits=(2, 3, 4), group_size=G, asymmetric=qw.asymmetric)
  y_pl = anybcq.QuantizedDense(**common, impl="pallas", interpret=True).apply(variables, x, 3)
  want = x.astype(np.float64) @ np.asarray(qw.dequantize(3), np.float64).T
  np.testing.assert_allclose(np.asarray(y_pl), want, rtol=1e-5, atol=1e-4)


def test_nbytes_matches_formula_and_packed_arrays(qw):
  groups = K // G
  planes = 4 * K * N // 8
  alpha = (2 + 3 + 4) * groups * N * 2
  beta = 3 * groups * N * 2 if qw.asymmetric else 0
  assert qw.nbytes() == planes + alpha + beta
  for p in (2, 3, 4):
    assert qw.nbytes(p) == p * K * N // 8 + p * groups * N * 2 + (
      groups * N * 2 if qw.asymmetric else 0
    )
  # stored sizes are the packed arrays' sizes (16-bit scales)
  packed = qw.to_packed()
  stored = (
    packed.planes.nbytes
    + packed.alpha.size * 2
    + (0 if packed.beta is None else packed.beta.size * 2)
  )
  assert qw.nbytes(padded=True) == stored
  rep = anybcq.linear_nbytes(8, 384, (2, 3, 4), 128, asymmetric=True, padded=True)
  assert rep.planes_bytes == 4 * 512 * 8 // 8 and rep.alpha_bytes == 9 * 4 * 8 * 2
  assert anybcq.linear_nbytes(8, 384, (2, 3, 4), 128).planes_bytes == 4 * 384 * 8 // 8
  assert anybcq.linear_nbytes(8, 384).beta_bytes == 3 * 3 * 8 * 2  # asymmetric by default


def test_table1_arithmetic():
  shapes = table1_lib.llama31_8b_linear_shapes()
  assert len(shapes) == 224 and sum(n * k for n, k in shapes) == 6_979_321_856
  # bits per weight (section 7): 4 + 1.125 vs 9 + 1.125; beta adds 0.375
  n_w = sum(n * k for n, k in shapes)
  m = anybcq.model_nbytes(shapes, (2, 3, 4), 128, asymmetric=False)
  assert m.total_bytes * 8 == n_w * 5.125
  assert (
    anybcq.model_nbytes(shapes, (2, 3, 4), 128, fixed=True, asymmetric=False).total_bytes * 8
    == n_w * 10.125
  )
  assert anybcq.model_nbytes(shapes, (2, 3, 4), 128, asymmetric=True).beta_bytes * 8 == n_w * 0.375
  paper = table1_lib.PAPER_TABLE1_GB
  ours = table1_lib.table1(shapes)["alpha_only"]

  def ratio_interval(s, b):  # the paper's numbers are rounded to 0.01 GB
    return (s - 0.005) / (b + 0.005), (s + 0.005) / (b - 0.005)

  for key in ("bcq2", "bcq3", "bcq4", "anybcq"):
    lo, hi = ratio_interval(*paper[key])
    assert lo <= ours[key][0] / ours[key][1] <= hi, key
  saving_lo = 1 - (paper["anybcq_total"] + 0.005) / (paper["bcq_total"] - 0.005)
  saving_hi = 1 - (paper["anybcq_total"] - 0.005) / (paper["bcq_total"] + 0.005)
  assert saving_lo <= ours["saving"] <= saving_hi
  assert abs(ours["saving"] - (1 - 5.125 / 10.125)) < 1e-12
  # The table's absolute sizes imply ~7.78e9 quantized weights (3.89 GB of 4-bit planes); one
  # square linear with that many weights reproduces every entry to the table's rounding.
  n_implied = 3.89e9 * 8 / 4
  side = int(round(np.sqrt(n_implied) / 128)) * 128
  implied = table1_lib.table1([(side, side)])["alpha_only"]
  for key in ("bcq2", "bcq3", "bcq4", "anybcq"):
    np.testing.assert_allclose(implied[key], paper[key], atol=0.006)
  np.testing.assert_allclose(
    [implied["bcq_total"], implied["anybcq_total"]],
    [paper["bcq_total"], paper["anybcq_total"]],
    atol=0.011,
  )
  with_beta = table1_lib.table1(shapes)["alpha_beta"]
  assert with_beta["anybcq"][0] > ours["anybcq"][0]

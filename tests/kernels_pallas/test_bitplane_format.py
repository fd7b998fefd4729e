"""Tier 0 for the AnyBCQ bit-plane matmul: packing, converters, references, argument errors.

Oracles: the bit order written out by hand; the official checkpoint layout (bit j of word w is
input 32 w + j) evaluated independently in NumPy float64; dense float64 matmuls. Tolerances: the
f32 quantities compared are sums of <= 512 products of O(1) numbers, so f32 rounding is ~1e-6
relative; 1e-5 leaves slack while a wrong plane, scale row or bit position is O(1e-2) or larger.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import ops
from kernels_pallas.bitplane_matmul import reference as ref

NB = 4


def _signs(seed, nb, k, n):
  return jnp.asarray(
    np.where(np.random.default_rng(seed).random((nb, k, n)) < 0.5, 1, -1), jnp.int8
  )


def _f64_dequant(signs, alpha, beta, precisions, p, g):
  """W^(p) in float64 NumPy from unpacked ±1 planes (K, N) — independent of the packed format."""
  signs = np.asarray(signs, np.float64)
  k = signs.shape[1]
  qi = precisions.index(p)
  off = fmt.plane_offsets(precisions)[qi]
  rep = lambda a: np.repeat(np.asarray(a, np.float64), g, axis=0)[:k]  # (K/g, N) -> (K, N)
  w = np.zeros(signs.shape[1:]) if beta is None else rep(beta[qi])
  for b in range(p):
    w = w + rep(alpha[off + b]) * signs[b]
  return w


def test_pack_unpack_roundtrip_and_shapes():
  s = _signs(0, 3, 512, 5)
  packed = fmt.pack_planes(s)
  assert packed.dtype == jnp.uint32 and packed.shape == (3, 16, 5)
  np.testing.assert_array_equal(fmt.unpack_planes(packed), s)
  # {0, 1} and bool planes pack to the same words as ±1.
  np.testing.assert_array_equal(fmt.pack_planes((s > 0).astype(jnp.float32)), packed)
  np.testing.assert_array_equal(fmt.pack_planes(s > 0), packed)
  np.testing.assert_array_equal(fmt.unpack_planes(packed, signs=False), (s > 0).astype(jnp.int8))
  # K = 96 is padded to one 256-input tile; k= slices back exactly.
  s96 = s[:, :96]
  p96 = fmt.pack_planes(s96)
  assert p96.shape == (3, 8, 5)
  np.testing.assert_array_equal(fmt.unpack_planes(p96, k=96), s96)
  np.testing.assert_array_equal(fmt.unpack_planes(p96)[:, 96:], -1)


def test_hand_built_word_pins_bit_order():
  # +1 at exactly one input: plane 1, k = 256*1 + 8*5 + 3 (tile 1, bit j = 5, word r = 3), column 2.
  s = -np.ones((2, 512, 3), np.int8)
  s[1, 256 + 8 * 5 + 3, 2] = 1
  packed = np.asarray(fmt.pack_planes(jnp.asarray(s)))
  expected = np.zeros((2, 16, 3), np.uint32)
  expected[1, 8 * 1 + 3, 2] = 1 << 5
  np.testing.assert_array_equal(packed, expected)
  # And the inverse direction on a hand-written word: bit j of word r -> tile input 8 j + r.
  words = np.zeros((8, 1), np.uint32)
  words[6, 0] = (1 << 0) | (1 << 31)  # inputs 6 and 8*31 + 6 = 254
  bits = np.asarray(fmt.unpack_words(jnp.asarray(words), 0, 32))[:, 0]
  assert list(np.nonzero(bits)[0]) == [6, 254]
  # A group at offset 128 of the tile is exactly bit positions [16, 32).
  np.testing.assert_array_equal(fmt.unpack_words(jnp.asarray(words), 16, 16)[:, 0], bits[128:])


def test_reference_layout_converters_roundtrip(tmp_path):
  """planes <-> qweight [K/32, NB, N] (bit j of word w = input 32 w + j), scales <-> per-p dicts,
  through a tiny checkpoint file the test writes itself."""
  k, n, g, precisions = 384, 6, 128, (2, 3, 4)
  s = np.asarray(_signs(1, NB, k, n))
  # The official layout, built bit by bit in NumPy.
  bits = (s > 0).astype(np.uint64)  # (NB, K, N)
  q = np.zeros((k // 32, NB, n), np.uint64)
  for j in range(32):
    q |= bits[:, j::32, :].transpose(1, 0, 2) << np.uint64(j)
  qweight = q.astype(np.uint32).view(np.int32)
  rng = np.random.default_rng(0)
  alphas = {p: rng.uniform(0.1, 1, (k // g, p, n)).astype(np.float16) for p in precisions}
  betas = {p: rng.normal(0, 0.1, (k // g, n)).astype(np.float16) for p in precisions}
  path = tmp_path / "layer.npz"
  np.savez(
    path,
    qweight=qweight,
    **{f"alpha_{p}": alphas[p] for p in precisions},
    **{f"beta_{p}": betas[p] for p in precisions},
  )

  ckpt = np.load(path)
  planes, alpha, beta, got_prec = fmt.from_reference_layout(
    ckpt["qweight"],
    {p: ckpt[f"alpha_{p}"] for p in precisions},
    {p: ckpt[f"beta_{p}"] for p in precisions},
  )
  assert got_prec == precisions
  assert planes.shape == (NB, 512 // 32, n) and alpha.shape == (9, 4, n) and beta.shape == (3, 4, n)
  np.testing.assert_array_equal(fmt.unpack_planes(planes, k=k), s)
  dequant = jax.jit(ref.dequantize)
  for p in precisions:
    w = dequant(planes, alpha, beta, p)[:k]
    np.testing.assert_allclose(w, _f64_dequant(s, alpha, beta, precisions, p, g), rtol=1e-6)
  # Back to the reference layout, bit for bit.
  q2, alphas2, betas2 = fmt.to_reference_layout(planes, alpha, beta, precisions, k=k)
  np.testing.assert_array_equal(q2, qweight)
  for p in precisions:
    np.testing.assert_array_equal(alphas2[p], alphas[p])
    np.testing.assert_array_equal(betas2[p], betas[p])
  np.testing.assert_array_equal(fmt.planes_from_reference(fmt.planes_to_reference(planes)), planes)


# One jitted program for the reference checks: precision is traced, so the four precisions share it.
@jax.jit
def _ref_forms(x, planes, alpha, beta, p):
  return (
    ref.dequantize(planes, alpha, beta, p),
    ref.bitplane_matmul_reference(x, planes, alpha, beta, p),
    ref.bitplane_matmul_partials(x, planes, alpha, beta, p),
  )


def test_dequantize_and_both_references_match_float64():
  k, n, m, g, precisions = 256, 16, 5, 64, (1, 2, 3, 4)
  planes, alpha, beta, _ = fmt.random_bitplane_layer(
    2, k, n, num_planes=NB, precisions=precisions, group_size=g
  )
  x = jnp.asarray(np.random.default_rng(3).standard_normal((m, k)), jnp.float32)
  s = fmt.unpack_planes(planes)
  for b in (beta, None):
    for p in precisions:
      w64 = _f64_dequant(s, alpha, b, precisions, p, g)
      w, y_ref, y_part = _ref_forms(x, planes, alpha, b, p)
      np.testing.assert_allclose(w, w64, rtol=1e-6, atol=1e-7)
      y64 = np.asarray(x, np.float64) @ w64
      scale = np.abs(np.asarray(x, np.float64)) @ np.abs(w64)
      for y in (y_ref, y_part):
        assert np.all(np.abs(np.asarray(y, np.float64) - y64) <= 1e-5 * scale + 1e-6)
  # Mixed precision rows: both forms select each row's precision.
  prec = jnp.array([1, 4, 2, 3, 4], jnp.int32)
  y_ref, y_mix = jax.jit(
    lambda *a: (ref.bitplane_matmul_reference(*a), ref.bitplane_matmul_partials(*a))
  )(x, planes, alpha, beta, prec)
  for i, p in enumerate(np.asarray(prec)):
    y64 = np.asarray(x[i], np.float64) @ _f64_dequant(s, alpha, beta, precisions, int(p), g)
    np.testing.assert_allclose(y_mix[i], y64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_ref[i], y64, rtol=1e-5, atol=1e-5)


def test_precision_inference_and_traced_out_of_range_gives_nan():
  assert fmt.infer_precisions(4, 9) == (2, 3, 4)
  assert fmt.infer_precisions(4, 10) == (1, 2, 3, 4)
  assert fmt.infer_precisions(4, 4) == (4,)
  with pytest.raises(ValueError, match="precisions="):
    fmt.infer_precisions(4, 8)
  planes, alpha, beta, _ = fmt.random_bitplane_layer(4, 256, 8)
  x = jnp.ones((2, 256))
  y = jax.jit(lambda p: ref.bitplane_matmul_reference(x, planes, alpha, beta, p))(5)
  assert bool(jnp.all(jnp.isnan(y)))
  y = jax.jit(lambda p: ops.bitplane_matmul(x, planes, alpha, beta, p, impl="xla"))(
    jnp.array([3, 1], jnp.int32)
  )
  assert bool(jnp.all(jnp.isfinite(y[0]))) and bool(jnp.all(jnp.isnan(y[1])))


def test_errors_name_the_problem():
  planes, alpha, beta, _ = fmt.random_bitplane_layer(5, 256, 8, group_size=128)
  x = jnp.ones((2, 256))
  call = lambda *a, **kw: ops.bitplane_matmul(*a, impl="xla", **kw)
  with pytest.raises(ValueError, match="K % 32"):
    fmt.pack_planes(jnp.ones((1, 100, 4)))
  with pytest.raises(ValueError, match="K % 32"):
    call(jnp.ones((2, 250)), planes, alpha, beta, 2)
  p384, a384, b384, _ = fmt.random_bitplane_layer(6, 384, 8, group_size=128)
  with pytest.raises(ValueError, match="K % g"):
    call(jnp.ones((2, 320)), p384, a384, b384, 2)
  with pytest.raises(ValueError, match="does not match planes"):
    call(jnp.ones((2, 512)), planes, alpha, beta, 2)
  with pytest.raises(ValueError, match="out of range"):
    call(x, planes, alpha, beta, 1)
  with pytest.raises(ValueError, match="out of range"):
    call(x, planes, alpha, beta, jnp.array([2, 5]))
  with pytest.raises(ValueError, match="must be uint32"):
    call(x, planes.astype(jnp.int32), alpha, beta, 2)
  with pytest.raises(ValueError, match="must be uint32"):
    call(x, planes.astype(jnp.uint8), alpha, beta, 2)
  with pytest.raises(ValueError, match="precision must be an integer"):
    call(x, planes, alpha, beta, 2.0)
  with pytest.raises(ValueError, match="shape x.shape"):
    call(x, planes, alpha, beta, jnp.array([2, 3, 4]))
  with pytest.raises(ValueError, match="beta must be"):
    call(x, planes, alpha, beta[:2], 2)
  with pytest.raises(ValueError, match="group_size"):
    call(x, planes, alpha, beta, 2, group_size=64)
  with pytest.raises(ValueError, match="alpha"):
    call(x, planes, alpha[:8], beta, 2, precisions=(2, 3, 4))
  with pytest.raises(ValueError, match="multiple of the 256-input tile and of g"):
    from kernels_pallas.bitplane_matmul import kernel_tpu

    kernel_tpu.bitplane_matmul_tpu(
      jnp.ones((8, 512)),
      jnp.zeros((4, 16, 128), jnp.uint32),
      jnp.ones((9, 2, 128)),
      None,
      jnp.zeros((4,), jnp.int32),
      precisions=(2, 3, 4),
      group_size=256,
      variant="partials",
      bm=8,
      bn=128,
      bk=384,
      out_dtype=jnp.float32,
      interpret=True,
    )
  with pytest.raises(ValueError, match="impl"):
    ops.bitplane_matmul(x, planes, alpha, beta, 2, impl="cuda")

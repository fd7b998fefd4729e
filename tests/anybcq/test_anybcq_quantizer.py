"""Property tests of the AnyBCQ quantizer (Park et al., ICLR 2026; github.com/naver-aics/anybcq).

Oracles: closed forms, float64 least squares, brute force over all code assignments, and the
monotonicity guarantees of specs/anybcq.md sections 2-3. The quantizer runs in float32; exact
properties are checked in float64 with a slack of a few float32 ulps of the quantities compared
(each comment says which). All matrices share one shape (32 x 256, g = 64) so the jitted cores
compile once per (bits, asymmetric) and are reused across tests.
"""

import itertools

import numpy as np
import pytest

from iclr26_jax import anybcq

N, K, G = 32, 256, 64
T = 8
F32 = np.finfo(np.float32).eps


def _gauss(seed, n=N, k=K):
  return np.random.default_rng(seed).standard_normal((n, k)).astype(np.float32)


def _group_err(w, w_hat, g=G):
  d = (np.asarray(w, np.float64) - np.asarray(w_hat, np.float64)).reshape(w.shape[0], -1, g)
  return np.sum(d * d, axis=-1)


@pytest.fixture(scope="module")
def weight():
  return _gauss(0)


@pytest.fixture(scope="module", params=[False, True], ids=["sym", "asym"])
def quantized(request, weight):
  qw, info = anybcq.quantize_with_info(weight, (2, 3, 4), G, T, request.param)
  return request.param, qw, info


def test_one_bit_closed_form():
  # (8, 384), g = 128, rounds = 2: the shapes of the layer tests' padded-K case (shared compiles).
  w = _gauss(1, 8, 384)
  w[0, :5] = 0.0  # sign(0) must be +1
  for qw in (
    anybcq.greedy_bcq_quantize(w, 1, 128, asymmetric=False),
    anybcq.quantize(w, (1,), 128, 2, asymmetric=False),
  ):
    np.testing.assert_array_equal(np.asarray(qw.planes(1))[0], np.where(w >= 0, 1, -1))
    want = np.abs(w.astype(np.float64)).reshape(8, -1, 128).mean(-1)
    # greedy: a float32 mean; after LS: B^T w / g with a ridge removed to O(1e-12) -> f32 rounding
    np.testing.assert_allclose(np.asarray(qw.alpha(1))[..., 0], want, rtol=8 * F32)


def _normal_eq_check(w, signs, alpha, beta, g, fit_beta):
  """Relative normal-equation residual and agreement with a float64 lstsq, per group."""
  p = signs.shape[0]
  s = np.transpose(np.asarray(signs, np.float64).reshape(p, w.shape[0], -1, g), (1, 2, 3, 0))
  wg = np.asarray(w, np.float64).reshape(w.shape[0], -1, g)
  a = np.asarray(alpha, np.float64)
  b = np.zeros(wg.shape[:2]) if beta is None else np.asarray(beta, np.float64)
  design = np.concatenate([s, np.ones(s.shape[:-1] + (1,))], -1) if fit_beta else s
  target = wg if fit_beta else wg - b[..., None]
  theta = np.concatenate([a, b[..., None]], -1) if fit_beta else a
  resid = np.einsum("ngki,ngk->ngi", design, np.einsum("ngki,ngi->ngk", design, theta) - target)
  scale = np.linalg.norm(np.einsum("ngki,ngk->ngi", design, target), axis=-1)
  worst = np.max(np.linalg.norm(resid, axis=-1) / scale)
  ref = np.stack(
    [
      np.linalg.lstsq(design[i, j], target[i, j], rcond=None)[0]
      for i in range(wg.shape[0])
      for j in range(wg.shape[1])
    ]
  )
  return worst, np.max(np.abs(ref - theta.reshape(ref.shape)))


def test_ls_optimality(quantized, weight):
  asym, qw, _ = quantized
  # Expansion output: alpha^(p) is the LS fit of all p planes with beta fixed (its last step).
  for p in (3, 4):
    worst, diff = _normal_eq_check(weight, qw.planes(p), qw.alpha(p), qw.beta(p), G, False)
    # float32 solve of a well-conditioned <= 4x4 system: residual ~ a few hundred f32 ulps of B^T w
    assert worst < 3e-5, (p, worst)
    assert diff < 1e-4, (p, diff)
  # Greedy + LS baseline: the exact LS fit of its codes (jointly with beta when asymmetric).
  # (Asymmetric in both parametrisations: the joint fit is the harder case and the compile is
  # shared with the baseline-ordering test.)
  gl = anybcq.greedy_bcq_quantize(weight, 3, G, asymmetric=True, refit=True)
  worst, diff = _normal_eq_check(weight, gl.planes(3), gl.alpha(3), gl.beta(3), G, True)
  assert worst < 3e-5 and diff < 1e-4, (worst, diff)


def test_code_search_equals_brute_force(weight):
  qw = anybcq.fixed_bcq_quantize(weight, 3, G, T, asymmetric=True)  # levels with an offset
  alpha = np.asarray(qw.alpha(3), np.float64)  # (N, G, 3)
  beta = np.zeros(alpha.shape[:2]) if qw.beta(3) is None else np.asarray(qw.beta(3), np.float64)
  codes = np.array(list(itertools.product([1.0, -1.0], repeat=3)))  # all 2^3 assignments
  levels = beta[..., None] + np.einsum("ngi,ci->ngc", alpha, codes)  # (N, G, 8)
  wg = weight.astype(np.float64).reshape(N, -1, G)
  dist = np.abs(wg[..., None] - levels[:, :, None, :])  # (N, G, g, 8)
  s = np.transpose(np.asarray(qw.planes(3), np.float64).reshape(3, N, -1, G), (1, 2, 3, 0))
  assigned = np.abs(wg - beta[..., None] - np.einsum("ngki,ngi->ngk", s, alpha))
  srt = np.sort(dist, axis=-1)
  untied = (srt[..., 1] - srt[..., 0]) > 1e-5  # ties excluded
  assert untied.mean() > 0.9
  # levels are formed in float32 by the quantizer: agree to a few f32 ulps of |w| ~ 4
  np.testing.assert_array_less(assigned[untied] - srt[..., 0][untied], 1e-5)


def test_refinement_non_increasing(quantized):
  _, _, info = quantized
  errs = np.asarray(info.base_errors, np.float64)  # (T + 1, N, G), row 0 = greedy
  tol = 1e-5 * errs[0] + 1e-7  # float32 error evaluation: ~ g * f32 ulp relative
  assert np.all(np.diff(errs, axis=0) <= tol)
  assert np.all(errs[-1] <= errs[0] + tol)
  assert np.mean(errs[-1] < 0.98 * errs[0]) > 0.5  # refinement actually does something


def test_error_non_increasing_across_precisions(quantized, weight):
  _, qw, info = quantized
  errs = [_group_err(weight, qw.dequantize(p)) for p in (2, 3, 4)]
  for lo, hi in zip(errs, errs[1:]):
    assert np.all(hi <= lo * (1 + 1e-5) + 1e-7)
    assert np.mean(hi < 0.9 * lo) > 0.9
  assert len(info.expand_errors) == 2 and all(isinstance(n, int) for n in info.negative_alpha)
  # the per-round guarantee needs alpha_{p+1} >= 0, which holds for Gaussian weights
  assert sum(info.negative_alpha) == 0
  for e in info.expand_errors:  # (T + 1, N, G); row 0 = the error at p
    e = np.asarray(e, np.float64)
    assert np.all(np.diff(e, axis=0) <= 1e-5 * e[0] + 1e-7)
  np.testing.assert_allclose(np.asarray(info.expand_errors[0])[-1], errs[1], rtol=1e-4, atol=1e-6)


def test_frozen_planes_and_scales(quantized, weight):
  asym, qw, _ = quantized
  q2 = anybcq.quantize(weight, (2,), G, T, asym)
  q23 = anybcq.quantize(weight, (2, 3), G, T, asym)
  np.testing.assert_array_equal(np.asarray(qw.signs[:2]), np.asarray(q2.signs))
  np.testing.assert_array_equal(np.asarray(qw.signs[:3]), np.asarray(q23.signs))
  np.testing.assert_array_equal(np.asarray(qw.alpha(2)), np.asarray(q2.alpha(2)))
  np.testing.assert_array_equal(np.asarray(qw.alpha(3)), np.asarray(q23.alpha(3)))
  # expand_precision continues from the stored top scales exactly as quantize does
  q234 = anybcq.expand_precision(q23, weight, T)
  assert q234.bits == (2, 3, 4)
  np.testing.assert_array_equal(np.asarray(q234.signs), np.asarray(qw.signs))
  np.testing.assert_array_equal(np.asarray(q234.alpha(4)), np.asarray(qw.alpha(4)))
  if asym:
    for p in (2, 3, 4):  # beta is carried, never refitted by expansion
      np.testing.assert_array_equal(np.asarray(qw.beta(p)), np.asarray(q2.beta(2)))
  else:
    assert qw.betas is None


def test_orderings_vs_baselines(weight):
  # Checked once, for the paper's default (asymmetric); the cores are already compiled.
  asym = True
  qw = anybcq.quantize(weight, (2, 3, 4), G, T, asymmetric=asym)
  rel = lambda w_hat: np.linalg.norm(weight - np.asarray(w_hat)) / np.linalg.norm(weight)
  for p in (2, 3, 4):
    any_p = rel(qw.dequantize(p))
    greedy_ls = rel(anybcq.greedy_bcq_quantize(weight, p, G, asym, refit=True).dequantize(p))
    rtn = rel(anybcq.rtn_quantize(weight, p, G).dequantize(p))
    assert any_p <= greedy_ls, (p, any_p, greedy_ls)
    if p == 2:  # Gaussian: ~0.33 vs ~0.50 (first honest run); require a clear third
      assert any_p < 0.75 * rtn
    if p == 3:
      assert any_p < rtn
    if p == 4:  # shared planes cost ~ a fifth at 4 bits (first run 1.19); allow 1.35
      fixed = rel(anybcq.fixed_bcq_quantize(weight, 4, G, T, asym).dequantize(4))
      assert any_p < 1.35 * fixed, (any_p, fixed)


def test_rtn_oracle(weight):
  r = anybcq.rtn_quantize(weight, 3, G)
  w_hat = np.asarray(r.dequantize(3))
  step = np.repeat(np.asarray(r.scale), G, axis=1)
  assert np.all(np.abs(weight - w_hat) <= step / 2 * (1 + 1e-5) + 1e-6)
  assert np.asarray(r.codes).max() <= 7
  wg = weight.reshape(N, -1, G)  # min and max of every group are grid points
  np.testing.assert_allclose(w_hat.reshape(N, -1, G).min(-1), wg.min(-1), atol=1e-6)
  np.testing.assert_allclose(w_hat.reshape(N, -1, G).max(-1), wg.max(-1), atol=1e-5)


@pytest.mark.parametrize("asym", [False, True], ids=["sym", "asym"])
def test_degenerate_groups_finite(asym):
  w = _gauss(2)
  w[0] = 0.0  # all-zero groups
  w[1] = 0.75  # constant groups
  w[2] = np.tile([0.5, -0.5], K // 2)  # two-level: plane 2 collinear with plane 1 / constant
  w[3, :G] = 3.0  # one constant group in a normal row
  qw, info = anybcq.quantize_with_info(w, (2, 3, 4), G, T, asym)
  for p in (2, 3, 4):
    assert np.all(np.isfinite(np.asarray(qw.alpha(p))))
    w_hat = np.asarray(qw.dequantize(p))
    assert np.all(np.isfinite(w_hat))
    np.testing.assert_allclose(w_hat[:4, :G], w[:4, :G], atol=1e-5)  # representable exactly
    np.testing.assert_allclose(w_hat[2], w[2], atol=1e-5)
  assert all(np.all(np.isfinite(np.asarray(e))) for e in info.expand_errors)


def test_bad_inputs(weight):
  with pytest.raises(ValueError, match="multiple of group_size"):
    anybcq.quantize(weight[:, :200], group_size=G)
  bad = weight.copy()
  bad[3, 7] = np.nan
  with pytest.raises(ValueError, match="non-finite"):
    anybcq.quantize(bad, group_size=G)
  bad[3, 7] = np.inf
  with pytest.raises(ValueError, match=r"non-finite.*row 3, col 7"):
    anybcq.rtn_quantize(bad, 2, G)
  with pytest.raises(ValueError, match="strictly increasing"):
    anybcq.quantize(weight, bits=(3, 2), group_size=G)
  with pytest.raises(ValueError, match=r"\(N, K\)"):
    anybcq.quantize(weight[0], group_size=G)
  qw = anybcq.quantize(weight, (2,), G, T)
  for call in (
    lambda: qw.dequantize(3),
    lambda: qw.planes(1),
    lambda: qw.nbytes(5),
    lambda: qw.alpha(4),
  ):
    with pytest.raises(ValueError, match="out of range"):
      call()
  with pytest.raises(ValueError, match="out of range"):
    anybcq.rtn_quantize(weight, 2, G).dequantize(3)
  with pytest.raises(ValueError, match="one int"):
    anybcq.fixed_bcq_quantize(weight, (2, 3), G)

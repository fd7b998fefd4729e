"""AnyBCQ calibration (Park et al., ICLR 2026; github.com/naver-aics/anybcq): block-wise scale
calibration and the closed-form activation-aware refit.

Oracles: a dense float64 least squares for the closed form (D_n built explicitly), the closed-form
optimum as the target of Adam on a single-linear block, and the frozen-state properties of
specs/anybcq.md section 13 (bitwise). Weights are (32, 256) with g = 64 and T = 8, the quantizer
tests' shapes, so the jitted quantizer cores are shared.
"""

import jax
import numpy as np
import pytest

from iclr26_jax import anybcq
from iclr26_jax.anybcq.quantizer import dequantize_planes

N, K, G = 32, 256, 64
T = 8
M = 192


def gated_mlp_block(ws, x):
  """A 2-linear gated MLP block: y = gelu(x W_gate^T) * (x W_up^T); x (M, K) -> (M, N)."""
  return jax.nn.gelu(x @ ws["gate"].T) * (x @ ws["up"].T)


def linear_block(ws, x):
  return x @ ws["fc"].T


def _anisotropic_inputs(seed, m=M, k=K):
  """Tokens with log-normal per-feature scales and correlated features (outlier channels)."""
  rng = np.random.default_rng(seed)
  mix = np.eye(k) + 0.3 * rng.standard_normal((k, k)) / np.sqrt(k)
  return ((rng.standard_normal((m, k)) @ mix) * np.exp(1.2 * rng.standard_normal(k))).astype(
    np.float32
  )


@pytest.fixture(scope="module")
def data():
  rng = np.random.default_rng(0)
  ws = {
    "gate": rng.standard_normal((N, K)).astype(np.float32) / 16,
    "up": rng.standard_normal((N, K)).astype(np.float32) / 16,
  }
  return ws, _anisotropic_inputs(1)


@pytest.fixture(scope="module")
def calibrated(data):
  ws, x = data
  res = anybcq.calibrate_block(
    gated_mlp_block,
    ws,
    x,
    bits=(2, 3, 4),
    group_size=G,
    asymmetric=True,
    rounds=T,
    steps=100,
    lr=1e-3,
    batch_size=64,
    input_prob=1.0,
    seed=0,
  )
  return res


def test_calibration_lowers_block_mse_at_every_precision(calibrated):
  res = calibrated
  for p in (2, 3, 4):
    # First honest run: calibration cuts the MSE by well over half; require a clear 25%.
    assert res.mse_calibrated[p] < 0.75 * res.mse_init[p], (p, res.mse_init, res.mse_calibrated)
    assert np.all(np.isfinite(res.losses[p])) and res.losses[p].shape == (100,)
  assert res.mse_calibrated[2] > res.mse_calibrated[3] > res.mse_calibrated[4]


def test_calibration_keeps_planes_and_earlier_scales(calibrated, data):
  res = calibrated
  ws, _ = data
  for name, qw in res.quantized.items():
    assert qw.bits == (2, 3, 4)
    # base planes are the weight-space quantizer's (codes are constants during calibration)
    base = anybcq.quantize(ws[name], (2,), G, T, asymmetric=True)
    np.testing.assert_array_equal(np.asarray(qw.signs[:2]), np.asarray(base.signs))
    # alpha^(p), beta^(p) as saved at the end of stage p are untouched by later stages
    for p in (2, 3, 4):
      alpha, beta = res.snapshots[p][name]
      np.testing.assert_array_equal(np.asarray(qw.alpha(p)), np.asarray(alpha))
      np.testing.assert_array_equal(np.asarray(qw.beta(p)), np.asarray(beta))
    # stage 2 really trained alpha^(2) (the snapshot differs from the weight-space init)
    assert not np.array_equal(np.asarray(qw.alpha(2)), np.asarray(base.alpha(2)))
  # cached quantized outputs are the block evaluated with the calibrated precision-p weights
  x = data[1]
  wq = {nm: res.quantized[nm].dequantize(4) for nm in res.quantized}
  y_ref = np.asarray(gated_mlp_block(wq, x))
  # two f32 evaluations of the same block: agree to f32 rounding of the largest outputs
  np.testing.assert_allclose(
    np.asarray(res.outputs_q[4]), y_ref, rtol=0, atol=1e-5 * np.abs(y_ref).max()
  )


def _dense_lstsq_objective(w, signs, x, g):
  """min_a ||X (w_n - D_n a)||^2 summed over rows, with D_n formed densely (float64)."""
  p, n, k = signs.shape
  x = x.astype(np.float64)
  total = 0.0
  for r in range(n):
    cols = []
    for gr in range(k // g):
      for i in range(p):
        c = np.zeros(k)
        c[gr * g : (gr + 1) * g] = signs[i, r, gr * g : (gr + 1) * g]
        cols.append(c)
    d = np.stack(cols, axis=1)  # (K, G p)
    xd, xw = x @ d, x @ w[r].astype(np.float64)
    a = np.linalg.lstsq(xd, xw, rcond=None)[0]
    total += np.sum((xw - xd @ a) ** 2)
  return total


def test_closed_form_refit_is_the_output_optimum_and_beats_weight_space(data):
  ws, x = data
  w = ws["gate"]
  qw = anybcq.quantize(w, (2, 3, 4), G, T, asymmetric=False)  # symmetric codes
  x64 = x.astype(np.float64)
  for p in (2, 3, 4):
    signs = np.asarray(qw.planes(p))
    alpha_aa, beta_aa = anybcq.activation_aware_scales(w, signs, x, group_size=G)
    assert beta_aa is None and alpha_aa.shape == (N, K // G, p)
    w_aa = np.asarray(dequantize_planes(signs, alpha_aa, None, G), np.float64)
    obj_aa = np.sum((x64 @ (w - w_aa).T) ** 2)
    if p == 2:  # dense float64 oracle: the same minimum (f32 assembly of D^T H D: 1e-4 slack)
      obj_ref = _dense_lstsq_objective(w, signs, x, G)
      assert obj_ref <= obj_aa <= obj_ref * (1 + 1e-4), (obj_aa, obj_ref)
    # weight-space LS scales for the same codes (float64 normal equations per group)
    wg = w.reshape(N, -1, G)
    s = np.transpose(signs.astype(np.float64).reshape(p, N, -1, G), (1, 2, 3, 0))
    a_ls = np.linalg.solve(
      np.einsum("ngki,ngkj->ngij", s, s) + 1e-9 * np.eye(p),
      np.einsum("ngki,ngk->ngi", s, wg)[..., None],
    )[..., 0]
    w_ls = np.einsum("ngki,ngi->ngk", s, a_ls).reshape(N, K)
    e_ls = anybcq.output_error(w, w_ls, x)
    e_aa = anybcq.output_error(w, w_aa, x)
    # On outlier-channel inputs the closed form lowers the output error by a large margin (first
    # run: ~40-60%); require 20%.
    assert e_aa < 0.8 * e_ls, (p, e_aa, e_ls)
  refit = anybcq.refit_precision(qw, w, x, 2)
  np.testing.assert_array_equal(np.asarray(refit.signs), np.asarray(qw.signs))
  np.testing.assert_array_equal(np.asarray(refit.alpha(3)), np.asarray(qw.alpha(3)))
  assert anybcq.output_error(w, refit.dequantize(2), x) < anybcq.output_error(
    w, qw.dequantize(2), x
  )


def test_adam_on_single_linear_converges_to_closed_form(data):
  ws, x = data
  w = ws["up"]
  res = anybcq.calibrate_block(
    linear_block,
    {"fc": w},
    x,
    bits=(2,),
    group_size=G,
    rounds=T,
    steps=250,
    lr=3e-2,
    batch_size=M,
    input_prob=0.0,
    asymmetric=False,  # the closed form below is the symmetric (alpha-only) optimum
  )
  qf = res.quantized["fc"]
  alpha, _ = anybcq.activation_aware_scales(w, qf.planes(2), x, group_size=G)
  w_cf = np.asarray(dequantize_planes(qf.planes(2), alpha, None, G), np.float64)
  mse_cf = np.mean((x.astype(np.float64) @ (w - w_cf).T) ** 2)
  # Adam cannot beat the optimum (beyond f32 evaluation noise) and gets within 3% of it.
  assert mse_cf * (1 - 1e-4) <= res.mse_calibrated[2] <= 1.03 * mse_cf, (res.mse_calibrated, mse_cf)
  assert res.mse_calibrated[2] < 0.8 * res.mse_init[2]


def test_calibration_bad_inputs(data):
  ws, x = data
  with pytest.raises(ValueError, match="consecutive"):
    anybcq.calibrate_block(gated_mlp_block, ws, x, bits=(2, 4), group_size=G)
  with pytest.raises(ValueError, match="input_prob"):
    anybcq.calibrate_block(gated_mlp_block, ws, x, group_size=G, input_prob=1.5)
  bad = dict(ws, up=np.where(np.arange(K) == 3, np.nan, ws["up"]).astype(np.float32))
  with pytest.raises(ValueError, match=r"weights\['up'\].*non-finite"):
    anybcq.calibrate_block(gated_mlp_block, bad, x, group_size=G)
  with pytest.raises(ValueError, match="x_q dict lacks precisions"):
    anybcq.calibrate_block(gated_mlp_block, ws, x, {2: x}, group_size=G)
  with pytest.raises(ValueError, match="exactly one of x"):
    anybcq.activation_aware_scales(ws["up"], np.ones((2, N, K), np.int8), group_size=G)


def test_activation_aware_scales_shape_checks_name_the_argument(data):
  """The chex-checked boundary raises ValueError naming the argument, the need and the got."""
  ws, x = data
  signs = np.ones((2, N, K), np.int8)
  with pytest.raises(
    ValueError, match=rf"x must be \(M, K\) with K = {K}; got shape \(4, {K - 1}\)"
  ):
    anybcq.activation_aware_scales(ws["up"], signs, x[:4, :-1], group_size=G)
  with pytest.raises(
    ValueError, match=rf"hessian must be \(K, K\) = \({K}, {K}\); got shape \({K},\)"
  ):
    anybcq.activation_aware_scales(ws["up"], signs, hessian=np.ones(K), group_size=G)
  with pytest.raises(
    ValueError, match=rf"signs must be \(p, N, K\) = \(p, {N}, {K}\); got shape \({N}, {K}\)"
  ):
    anybcq.activation_aware_scales(ws["up"], signs[0], x, group_size=G)

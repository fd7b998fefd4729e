"""T9: parameter and FLOP accounting, including the paper's Fig. 1 FLOP axes. Integer arithmetic: exact."""

import jax
import jax.numpy as jnp
import pytest

from iclr26_jax.lmkan.flops import (count_model, linear_flops, lmkan_flops, lmkan_net_flops,
                                    lmkan_overhead, lmkan_params, mlp_flops)
from iclr26_jax.lmkan.networks import CNN, LMKANCNN, LMKANNet, MLP


def test_fig1_flop_axes():
  # Fig. 1 (general function approximation): MLP 32 → H → H → H → 1 at 2·(32H + 2H² + H), quoted as
  # 2.1K / 6.2K / 20.6K / 74K / 279K / 1.08M; lmKAN of the same shapes at 4.2K / 12.4K / 41K / 148K.
  quoted_mlp = {16: 2.1e3, 32: 6.2e3, 64: 20.6e3, 128: 74e3, 256: 279e3, 512: 1.08e6}
  for h, q in quoted_mlp.items():
    f = mlp_flops([32, h, h, h, 1])
    assert f == 2 * (32 * h + 2 * h * h + h)
    assert f == pytest.approx(q, rel=0.01)  # the quoted values are rounded to 2–3 digits
  assert mlp_flops([32, 16, 16, 16, 1]) == 2080
  quoted_lmkan = {16: 4.2e3, 32: 12.4e3, 64: 41e3, 128: 148e3}
  for h, q in quoted_lmkan.items():
    f = lmkan_net_flops([32, h, h, h, 1])
    assert f == 4 * (32 * h + 2 * h * h + h) == 2 * mlp_flops([32, h, h, h, 1])
    assert f == pytest.approx(q, rel=0.01)


def test_layer_accounting():
  assert lmkan_flops(8, 5) == 4 * 8 * 5 == 2 * linear_flops(8, 5)
  assert lmkan_flops(7, 3) == 8 * 4 * 3  # odd width: the padded pair still costs a lookup
  assert lmkan_params(8, 5, 8) == 81 * 5 * 4
  assert lmkan_params(128, 128, 26) == 5_971_968  # the reference README's example
  assert lmkan_overhead(9) == (12 * 5, 2 * 5)


def test_count_model_dense_stacks():
  x = jax.ShapeDtypeStruct((3, 32), jnp.float32)
  h, g = 16, 8
  kan = count_model(LMKANNet((h, h, h, 1), grid_size=g), x)
  mlp = count_model(MLP((h, h, h, 1)), x)
  assert mlp.flops == 2080 and mlp.overhead_flops == 0
  assert kan.flops == 2 * mlp.flops
  assert kan.params == sum(lmkan_params(a, b, g) for a, b in [(32, h), (h, h), (h, h), (h, 1)])
  assert mlp.params == 32 * h + 2 * h * h + h + (3 * h + 1)  # weights + biases
  assert kan.overhead_flops == 12 * (16 + 8 + 8 + 8) and kan.overhead_transcendentals == 2 * 40


def test_count_model_cnns_are_exactly_two_to_one():
  # Input channels 2 so every patch width is even (2·9, 4·9) and the flattened head input too (24).
  x = jax.ShapeDtypeStruct((1, 8, 8, 2), jnp.float32)
  cnn = count_model(CNN((4, 6), (10,)), x)
  kan = count_model(LMKANCNN((4, 6), (10,), grid_size=4), x)
  # conv_0: 64 positions · 2·(9·2)·4; pool → 4×4; conv_1: 16 · 2·(9·4)·6; pool → 2×2×6 = 24; dense 24·10.
  want = 64 * 2 * 18 * 4 + 16 * 2 * 36 * 6 + 2 * 24 * 10
  assert cnn.flops == want
  assert kan.flops == 2 * want
  assert kan.params == 25 * (4 * 9 + 6 * 18 + 10 * 12)


def test_accounting_errors():
  with pytest.raises(ValueError, match="n_in"):
    linear_flops(0, 3)
  with pytest.raises(ValueError, match="grid_size"):
    lmkan_params(4, 4, 2)
  with pytest.raises(ValueError, match="widths"):
    mlp_flops([32])

"""Parameter and FLOP accounting, including the paper's Fig. 1 FLOP axes. Integer arithmetic: exact."""

import jax
import jax.numpy as jnp
import pytest

from iclr26_jax.lmkan.flops import (
  count_model,
  linear_flops,
  lmkan_flops,
  lmkan_net_flops,
  lmkan_overhead,
  lmkan_params,
  mlp_flops,
)
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
  assert mlp.flops == 2080
  assert mlp.overhead_flops == 3 * h + 1  # one add per bias
  assert kan.flops == 2 * mlp.flops
  assert kan.params == sum(lmkan_params(a, b, g) for a, b in [(32, h), (h, h), (h, h), (h, 1)])
  assert mlp.params == 32 * h + 2 * h * h + h + (3 * h + 1)  # weights + biases
  # 12 per pair (16 + 8 + 8 + 8 pairs) and 2 per BatchNorm input element (32 + 16 + 16 + 16).
  assert kan.overhead_flops == 12 * 40 + 2 * 80 and kan.overhead_transcendentals == 2 * 40
  assert kan.total_flops == kan.flops + 12 * 40 + 2 * 80 + 2 * 40


def test_overhead_hand_count_tiny_layer():
  """Hand count of one BatchNorm → lmKAN layer, 5 → 3, against the operations the forward performs.

  Pairs: ⌈5/2⌉ = 3 (the 5th input is padded with a zero). Per pair, as `corner_weights` computes
  them: σ needs 1 exp per coordinate (2); the cell ⌊G·σ⌋ clamped is a mul + floor per coordinate,
  counted 2 per pair; δ = (x − t_c)·r_c is a sub and a mul per coordinate (4); the weights
  (1−δ1), (1−δ2) and the four products are 2 subs + 4 muls (6). So 12 FLOPs + 2 exp per pair.
  Per function: 4 multiply-adds = 8 FLOPs, 3 pairs × 3 outputs = 9 functions. BatchNorm at inference
  on 5 inputs: a sub and a mul each = 10.
  """
  kan = count_model(LMKANNet((3,), grid_size=4), jax.ShapeDtypeStruct((2, 5), jnp.float32))
  assert kan.flops == 9 * 8 == 72
  assert kan.overhead_flops == 3 * (2 + 4 + 6) + 5 * 2 == 46
  assert kan.overhead_transcendentals == 3 * 2 == 6
  assert kan.total_flops == 72 + 46 + 6
  # The same-shape Dense with bias: 15 multiply-adds (30) + 3 bias adds; without bias no overhead.
  mlp = count_model(MLP((3,)), jax.ShapeDtypeStruct((2, 5), jnp.float32))
  assert (mlp.flops, mlp.overhead_flops, mlp.total_flops) == (30, 3, 33)
  mlp_nb = count_model(MLP((3,), use_bias=False), jax.ShapeDtypeStruct((2, 5), jnp.float32))
  assert (mlp_nb.flops, mlp_nb.overhead_flops) == (30, 0)


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
  # Overheads: CNN bias adds 64·4 + 16·6 + 10; lmKAN CNN BatchNorm on every layer input
  # (8·8·2, 4·4·4, 24) plus 12 per pair at every position (64·9, 16·18, 12).
  assert cnn.overhead_flops == 64 * 4 + 16 * 6 + 10
  assert kan.overhead_flops == 2 * (128 + 64 + 24) + 12 * (64 * 9 + 16 * 18 + 12)


def test_accounting_errors():
  with pytest.raises(ValueError, match="n_in"):
    linear_flops(0, 3)
  with pytest.raises(ValueError, match="grid_size"):
    lmkan_params(4, 4, 2)
  with pytest.raises(ValueError, match="widths"):
    mlp_flops([32])

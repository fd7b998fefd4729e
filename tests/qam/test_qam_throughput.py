"""Throughput features of the QAM update (QAM, Li & Levine, ICLR 2026,
github.com/ColinQiyangLi/qam): the rollout's v_θ forward reused by the adjoint-matching loss,
the bf16 matmul policy ``config.compute_dtype``, donated update buffers, and data parallelism
over a mesh through the shared trainer.

Oracles: the previous loss computation (``rollout`` under stop-gradient + one batched v_θ
forward on N·B points, ``grid_adjoint_matching_loss``), an f32 numpy matmul of bf16-rounded
operands, the float32 agent, the non-donating ``update``, and the same trainer run on a
1-device mesh. Networks are tiny; B = 64 keeps every v_θ matmul on the same XLA:CPU GEMM path
in both computations (at B = 16 XLA:CPU emits small dots differently for B and N·B rows and the
two losses differ by 1 ulp; bitwise equality is a property of the arithmetic, not of the kernel
selection).
"""

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from iclr26_jax.core import sharding as shd
from iclr26_jax.qam import adjoint
from iclr26_jax.qam import config as config_lib
from iclr26_jax.qam.agent import QAMAgent
from iclr26_jax.qam.networks import MLP, VelocityField
from tests.conftest import need_devices

B, S, ACT, H, N = 64, 3, 2, 2, 10
AGENT_N = 4  # flow steps of the agent-level checks (graph size; the math is N-agnostic)
UPDATES = 3
DA = H * ACT


def _flat_normal(key, shape):
  return jax.random.normal(key, (int(np.prod(shape)),)).reshape(shape)


# ----------------------------------------------------------------- reuse of the rollout forward
def test_reused_rollout_forward_gives_the_same_loss_bitwise():
  """Loss bitwise equal, states bitwise equal, gradients equal up to f32 summation order (the
  per-step backward sums the N parameter gradients in another order than one N·B matmul)."""
  net = VelocityField((32, 32), DA)
  init = lambda k: net.init(k, jnp.zeros((1, S)), jnp.zeros((1, DA)), jnp.zeros((1,)))
  p_fine, p_base = init(jax.random.PRNGKey(0)), init(jax.random.PRNGKey(1))
  v_base = lambda o, x, t: net.apply(p_base, o, x, t)
  q_fn = lambda o, a: jnp.stack(
    [-jnp.sum(jnp.square(a - 0.2), -1), -2.0 * jnp.sum(jnp.square(a + 0.1), -1) + o[:, 0]]
  )
  ks = jax.random.split(jax.random.PRNGKey(2), 3)
  obs, x0 = _flat_normal(ks[0], (B, S)), _flat_normal(ks[1], (B, DA))
  eps = _flat_normal(ks[2], (N - 1, B, DA))

  def adjs_of(xs):
    adj_n = adjoint.terminal_adjoint(q_fn, obs, xs[-1], 0.5)
    return jax.lax.stop_gradient(adjoint.lean_adjoint(v_base, obs, xs, adj_n, N))

  def old(p):
    v_sg = lambda o, x, t: net.apply(jax.lax.stop_gradient(p), o, x, t)
    xs = jax.lax.stop_gradient(adjoint.rollout(v_sg, v_base, obs, x0, eps, N))
    loss = adjoint.grid_adjoint_matching_loss(
      lambda o, x, t: net.apply(p, o, x, t), v_base, obs, xs, adjs_of(xs), N
    )
    return loss, xs

  def new(p):
    xs, v_at = adjoint.rollout_with_velocities(
      lambda o, x, t: net.apply(p, o, x, t), v_base, obs, x0, eps, N
    )
    loss = adjoint.adjoint_matching_loss(
      v_at, adjoint.base_velocities_on_grid(v_base, obs, xs, N), adjs_of(xs), N
    )
    return loss, xs

  (l_old, xs_old), g_old = jax.jit(jax.value_and_grad(old, has_aux=True))(p_fine)
  (l_new, xs_new), g_new = jax.jit(jax.value_and_grad(new, has_aux=True))(p_fine)
  np.testing.assert_array_equal(np.asarray(xs_new), np.asarray(xs_old))
  assert float(l_new) == float(l_old)
  for a, b in zip(jax.tree.leaves(g_old), jax.tree.leaves(g_new)):
    np.testing.assert_allclose(
      np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6 * float(np.max(np.abs(a)))
    )


# ----------------------------------------------------------------- bf16 policy
def _round_bf16(x):
  return np.asarray(np.asarray(x, np.float32).astype(ml_dtypes.bfloat16), np.float32)


def _gelu_tanh(x):  # flax's nn.gelu (approximate=True), in float64
  return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def test_bf16_matmuls_equal_f32_matmuls_of_rounded_operands():
  """A bf16×bf16 product is exact in f32 (8 + 8 significant bits ≤ 24), so bf16 operands with
  f32 accumulation equal an f64 matmul of the rounded operands up to f32 summation rounding
  (~1e-6 relative). A bf16 accumulator or output would be ~4e-3 off; an unrounded (f32) matmul
  is off by the operand rounding, which the second assertion requires to be visible."""
  mlp16 = MLP((64, 64), 5, compute_dtype="bfloat16")
  mlp32 = MLP((64, 64), 5)
  x = _flat_normal(jax.random.PRNGKey(3), (32, 7))
  params = mlp16.init(jax.random.PRNGKey(4), x)
  p32 = mlp32.init(jax.random.PRNGKey(4), x)
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(p32)):
    assert a.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # same f32 parameters
  out16 = np.asarray(jax.jit(mlp16.apply)(params, x))
  out32 = np.asarray(jax.jit(mlp32.apply)(params, x))
  assert out16.dtype == np.float32

  h = np.asarray(x, np.float64)
  layers = [params["params"][f"Dense_{i}"] for i in range(3)]
  for i, layer in enumerate(layers):
    w = _round_bf16(layer["kernel"]).astype(np.float64)
    h = _round_bf16(h.astype(np.float32)).astype(np.float64) @ w + np.asarray(
      layer["bias"], np.float64
    )
    if i < 2:
      h = _gelu_tanh(h).astype(np.float32).astype(np.float64)
  scale = float(np.max(np.abs(h)))
  np.testing.assert_allclose(out16, h, rtol=0, atol=2e-5 * scale)
  assert float(np.max(np.abs(out32 - h))) > 1e-3 * scale


def _agent_config(compute_dtype):
  cfg = config_lib.agent_defaults()
  cfg.actor_hidden_dims = (32,)
  cfg.critic_hidden_dims = (32,)
  cfg.num_qs = 2
  cfg.horizon = H
  cfg.flow_steps = AGENT_N
  cfg.batch_size = B
  cfg.inv_temp = 1.0
  cfg.compute_dtype = compute_dtype
  return cfg


def _batch():
  ks = jax.random.split(jax.random.PRNGKey(7), 4)
  return {
    "observations": _flat_normal(ks[0], (B, S)),
    "actions": jax.random.uniform(ks[1], (B * H * ACT,), minval=-0.9, maxval=0.9).reshape(
      B, H, ACT
    ),
    "rewards": -jax.random.uniform(ks[2], (B,), minval=0.0, maxval=2.0),
    "masks": jnp.ones((B,)),
    "valid": jnp.ones((B,)),
    "next_observations": _flat_normal(ks[3], (B, S)),
  }


def _create(compute_dtype):
  return QAMAgent.create(
    jax.random.PRNGKey(11), jnp.zeros((1, S)), jnp.zeros((1, ACT)), _agent_config(compute_dtype)
  )


@functools.lru_cache(maxsize=None)
def _donated_run(compute_dtype):
  """UPDATES donated updates of a fresh agent on one device: (infos, final arrays, whether
  every input buffer of the first call was freed, initial arrays)."""
  # The initial values from a twin agent: host views of the donated buffers (on CPU
  # ``device_get`` can alias them) would keep XLA from reusing them.
  init = jax.device_get(_create(compute_dtype).state.arrays())
  ag = _create(compute_dtype)
  first_inputs = jax.tree.leaves(ag.state.arrays())
  batch = _batch()
  infos = []
  for i in range(UPDATES):
    ag, info = ag.update_donated(batch)
    infos.append(jax.device_get(info))
    if i == 0:
      freed = all(x.is_deleted() for x in first_inputs)
  return infos, jax.device_get(ag.state.arrays()), freed, init


def test_donated_update_frees_its_inputs():
  infos, final, freed, init = _donated_run("float32")
  assert freed
  assert all(np.isfinite(float(i["total_loss"])) for i in infos)
  assert int(final["step"]) == UPDATES
  assert any(
    not np.array_equal(a, b)
    for a, b in zip(jax.tree.leaves(init["params"]), jax.tree.leaves(final["params"]))
  )


# Stated tolerance of the bf16 policy on losses: 2e-2 relative. Derivation: the only error
# source is rounding matmul operands to bf16 (relative error ≤ u = 2^-9 per operand; the MLP test
# above pins f32 accumulation), i.e. ≤ 2u ≈ 3.9e-3 per layer in the worst case and
# ~u·sqrt(2/3) ≈ 1.6e-3 for independent roundings. Two layers per network here (four at the
# reference size) compound to ≲ 8e-3 (1.6e-2) worst case on a network output; the losses are
# squared residuals (×2) of outputs that do not cancel at initialisation, and the adjoint target
# passes through the flow steps whose per-step errors partly average. Measured at the reference
# shape (4×512, K = 10, D_a = 25, B = 256): L_AM 3.5e-4, L_Q 1.1e-6, L_BC 5.9e-6 relative, far
# inside. bf16 parameters, bf16 activations between layers or a bf16 accumulator each add
# errors of their own that the MLP test above rejects at 2e-5.
BF16_LOSS_RTOL = 2e-2
LOSS_KEYS = ("critic/loss", "bc/fm_loss", "actor/am_loss", "total_loss")


def test_bf16_losses_within_stated_tolerance_of_f32():
  """QAM, same f32 initial parameters and keys: every loss of the first UPDATES updates within
  BF16_LOSS_RTOL of the f32 run, and visibly different from it (the policy is active)."""
  f32, _, _, init32 = _donated_run("float32")
  b16, final16, _, init16 = _donated_run("bfloat16")
  for a, b in zip(jax.tree.leaves(init32), jax.tree.leaves(init16)):
    np.testing.assert_array_equal(a, b)
  for a in jax.tree.leaves(final16["params"]):
    assert a.dtype == np.float32
  differs = False
  for step, (i32, i16) in enumerate(zip(f32, b16)):
    for k in LOSS_KEYS:
      x, y = float(i32[k]), float(i16[k])
      assert np.isfinite(y), (step, k)
      assert abs(y - x) <= BF16_LOSS_RTOL * abs(x), (step, k, x, y)
      differs |= x != y
  assert differs


def test_data_parallel_8_devices_equals_one_device():
  """The same UPDATES QAM updates with the batch sharded 8 rows per device over an 8-device
  ``data`` mesh (``shd.global_batch``, replicated agent: what the shared trainer does) against
  the 1-device run: batch means become cross-device sums, so losses agree to f32 rounding (rtol
  1e-5) and parameters to 1e-3 of their change over the run (element-wise). A shard that saw
  the wrong rows, or a gradient not averaged over devices, fails both."""
  devices = need_devices(8)
  ref_infos, ref_final, _, init = _donated_run("float32")
  mesh = shd.make_mesh({shd.DATA: 8}, devices)
  ag = jax.device_put(_create("float32"), shd.replicated(mesh))
  batch = shd.global_batch(jax.device_get(_batch()), mesh)
  assert batch["observations"].sharding.shard_shape(batch["observations"].shape) == (B // 8, S)
  for i in range(UPDATES):
    ag, info = ag.update_donated(batch)
    for k in LOSS_KEYS + ("grad_norm",):
      np.testing.assert_allclose(float(info[k]), float(ref_infos[i][k]), rtol=1e-5)
  final = jax.device_get(ag.state.arrays())
  for p0, p1, q1 in zip(
    jax.tree.leaves(init["params"]),
    jax.tree.leaves(ref_final["params"]),
    jax.tree.leaves(final["params"]),
  ):
    change = float(np.max(np.abs(p1 - p0)))
    assert change > 0
    np.testing.assert_allclose(q1, p1, rtol=0, atol=1e-3 * change)

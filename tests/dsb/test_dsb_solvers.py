"""Known-answer tests for the DLightSB and DLightSB-M solvers.

Oracle: exact enumeration on a tiny instance (D = 2, S = 6, so 36 states and 1296 pairs):
``metrics.exact_conditional_kl_tv`` gives E_{p_0} KL(pi*(.|x_0) || pi_theta(.|x_0)) with both
log-densities exact. The negative control is the independent coupling (pi(y | x_0) = p_1(y), the
exact target law), whose KL on this instance is about 0.57.

Each solver is trained once (one compiled scan per solver) in a module fixture; 600 steps of
batch 256 on a K = 8 model. Numbers from the first honest run (seed 1), for the thresholds below:
DLightSB 0.00089, DLightSB-M joint 0.0052, DLightSB-M per-coordinate KL under the independent
coupling 0.0033 and under the true coupling 0.00093.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import benchmark as bm
from iclr26_jax.dsb import metrics as M
from iclr26_jax.dsb.solvers import (
  DataProblem,
  DLightSB,
  DLightSBConfig,
  DLightSBM,
  DLightSBMConfig,
  init_potential,
)

S, D, K_TRUE, N, SKIP = 6, 2, 3, 3, 2
BASE = dict(
  num_potentials=8, train_steps=600, steps_per_chunk=300, batch_size=256, weight_decay=0.0
)


@pytest.fixture(scope="module")
def bench():
  # Uniform reference (lam^8 ~ 0.55) and a random CP potential: the plan depends on x_0
  # strongly enough that the independent coupling is far from it.
  return bm.make_benchmark(D, S, "uniform", 0.05, N, SKIP, K_TRUE, seed=0, potential="uniform")


def _exact_kl(bench, potential) -> float:
  return float(
    M.exact_conditional_kl_tv(
      bench, lambda x0, y: bm.plan_log_prob(potential, bench.reference, x0, y)
    ).kl
  )


@pytest.fixture(scope="module")
def independent_kl(bench):
  _, log_p1 = M.exact_target_log_probs(bench)
  return float(M.exact_conditional_kl_tv(bench, lambda x0, y: log_p1[y[:, 0] * S + y[:, 1]]).kl)


@pytest.fixture(scope="module")
def dlightsb_out(bench):
  return DLightSB(DLightSBConfig(**BASE)).solve(bench, jax.random.key(1))


@pytest.fixture(scope="module")
def joint_out(bench):
  return DLightSBM(DLightSBMConfig(**BASE, loss="joint")).solve(bench, jax.random.key(1))


@pytest.fixture(scope="module")
def percoord_out(bench):
  return DLightSBM(DLightSBMConfig(**BASE, loss="kl")).solve(bench, jax.random.key(1))


def test_independent_baseline_is_far(independent_kl):
  # Negative control: ignoring x_0 costs an exact KL of ~0.57 on this instance.
  assert independent_kl > 0.3


def test_dlightsb_reaches_small_exact_kl(bench, dlightsb_out, independent_kl):
  kl = _exact_kl(bench, dlightsb_out.potential)
  # First run: 0.00089. 0.004 leaves slack for platform round-off in 600 Adam steps and is still
  # more than 100x below the independent baseline (order 1e-3 is the expected level).
  assert kl < 4e-3, kl
  assert kl < independent_kl / 100
  loss = dlightsb_out.loss
  assert loss.shape == (BASE["train_steps"],) and np.all(np.isfinite(loss))
  assert loss[-100:].mean() < loss[:20].mean() - 0.5  # the objective fell (1.07 -> -0.01)


def test_dlightsb_m_joint_reaches_small_exact_kl(bench, joint_out, independent_kl):
  kl = _exact_kl(bench, joint_out.potential)
  # First run: 0.0052 (noisier estimator than DLightSB: one t per batch, and the telescoped
  # objective is DLightSB's divided by N + 1). 0.015 is still ~40x below the independent
  # baseline, from an *independent* coupling: the joint loss is unbiased.
  assert kl < 1.5e-2, kl
  assert kl < independent_kl / 30


def test_per_coordinate_loss_bias(bench, percoord_out, joint_out, dlightsb_out):
  """The per-coordinate KL loss under the independent coupling converges to a biased potential.

  Observed (first run): per-coordinate 0.0033 vs DLightSB 0.00089 at the same budget; the joint
  loss (0.0052) is *not* below it after 600 steps because its estimator is noisier, so the
  honest check of the bias is against DLightSB, which optimises the same population objective as
  `joint` (Eq. 13 telescopes to Eq. 12 / (N + 1)) with less variance.
  """
  kl_pc = _exact_kl(bench, percoord_out.potential)
  kl_dlsb = _exact_kl(bench, dlightsb_out.potential)
  assert kl_pc < 2e-2, kl_pc  # it still learns the coupling (far below 0.57) ...
  assert kl_pc > 2.0 * kl_dlsb, (kl_pc, kl_dlsb)  # ... but not the exact one
  assert np.all(np.isfinite(percoord_out.loss))
  assert "train/target_entropy" in percoord_out.info
  assert "train/log_phi_t_mean" in joint_out.info


def test_output_plugs_into_closed_forms(bench, dlightsb_out):
  pot = dlightsb_out.potential
  assert pot.log_alpha.shape == (8,) and pot.log_cp_cores.shape == (D, S, 8)
  x0 = bench.sample_source(jax.random.key(3), 64)
  y = bm.sample_plan(pot, bench.reference, jax.random.key(4), x0)
  assert y.shape == (64, D) and y.dtype == jnp.int32
  assert int(y.min()) >= 0 and int(y.max()) < S
  traj = bm.sample_markov(pot, bench.reference, jax.random.key(5), x0)
  assert traj.shape == (N + 2, 64, D)
  np.testing.assert_array_equal(np.asarray(traj[0]), np.asarray(x0))
  # The learned plan is a normalised conditional law: sum_y pi_theta(y | x_0) = 1.
  states = M.enumerate_states(D, S)
  x_rep = jnp.repeat(states[:3], states.shape[0], axis=0)
  y_rep = jnp.tile(states, (3, 1))
  lp = bm.plan_log_prob(pot, bench.reference, x_rep, y_rep).reshape(3, -1)
  np.testing.assert_allclose(np.asarray(jax.nn.logsumexp(lp, axis=-1)), 0.0, atol=1e-4)
  for name in (
    "train/loss",
    "train/grad_norm",
    "train/log_c_mean",
    "train/log_v_mean",
    "train/mixture_entropy",
  ):
    assert dlightsb_out.info[name].shape == (BASE["train_steps"],), name
  assert int(dlightsb_out.state.step) == BASE["train_steps"]


def test_samples_init_and_data_problem(bench):
  x0 = jnp.array([[0, 5], [2, 3], [4, 1]], jnp.int32)
  problem = DataProblem.create(bench.reference, x0, x0[::-1])
  cfg = DLightSBConfig(num_potentials=4, train_steps=1, steps_per_chunk=1)
  pot = init_potential(problem, jax.random.key(0), cfg)
  probs = np.exp(np.asarray(pot.log_cp_cores))  # (D, S, K)
  np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
  # Every component puts 0.9 on the categories of one of the x0 rows, in every coordinate.
  anchors = probs.argmax(1).T  # (K, D)
  assert set(map(tuple, anchors)) <= set(map(tuple, np.asarray(x0)))
  np.testing.assert_allclose(probs.max(1), 0.9, rtol=1e-5)
  assert abs(float(pot.log_alpha.mean()) + 2.0) < 0.3
  with pytest.raises(ValueError, match="x1"):
    DataProblem.create(bench.reference, x0, jnp.array([[0, 6]]))
  with pytest.raises(ValueError, match="paired rows"):
    DLightSBM(DLightSBMConfig(num_potentials=2, train_steps=1, steps_per_chunk=1)).solve(
      DataProblem.create(bench.reference, x0, x0[:2]), jax.random.key(0)
    )


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(num_potentials=0), "num_potentials"),
    (dict(train_steps=10, steps_per_chunk=3), "steps_per_chunk must divide"),
    (dict(init="zeros"), "init must be one of"),
    (dict(init_mass=1.0), "init_mass"),
    (dict(learning_rate=-1e-3), "learning_rate"),
    (dict(optimizer="sgd"), "optimizer"),
    (dict(batch_size=2.5), "batch_size"),
    (dict(b2=1.0), "b2"),
  ],
)
def test_bad_config_values(kwargs, match):
  with pytest.raises(ValueError, match=match):
    DLightSBConfig(**kwargs)


def test_bad_m_config_and_problem(bench):
  with pytest.raises(ValueError, match="loss must be one of"):
    DLightSBMConfig(loss="ce")
  with pytest.raises(ValueError, match="coupling must be one of"):
    DLightSBMConfig(coupling="ot")
  with pytest.raises(ValueError, match="config must be a DLightSBMConfig"):
    DLightSBM(DLightSBConfig())
  with pytest.raises(ValueError, match="problem must be a Benchmark or a DataProblem"):
    DLightSB(num_potentials=2, train_steps=1, steps_per_chunk=1).solve({"x0": 1}, jax.random.key(0))

"""PDNS through the shared trainer (``pdns.method.PDNSMethod``).

Oracles: exact enumeration of the lattice targets (``discrete_targets.ising`` / ``potts`` tables)
for the lattice energy and for log Z; the exact mixture weights; an uninterrupted run of the same
config for the kill-and-resume check (bitwise); the functional fit loop for the shared step.
"""

import importlib.util
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import metrics as metrics_lib
from iclr26_jax.core import trainer
from iclr26_jax.pdns import discrete_targets, method
from tests.conftest import REPO, Kill, kill_at

BETA, FIELD = 0.4, 0.1
TRAIN_ARG = (
  "target.size=3,target.beta=0.4,target.h=0.1,batch_size=64,prox.buffer_size=512,"
  "prox.epochs_per_stage=3,prox.num_stages=3,prox.refine_stages=1,prox.epsilon=0.5,"
  "optim.learning_rate=0.003,prox.ema_decay=0.9,sampler.hidden=64,sampler.depth=2,"
  "eval.num_samples=4096,num_steps=96,log_every=8,eval_every=0,checkpoint_every=20,"
  "progress_bar=False"
)
KILL_STEP = 30  # stages of 24 steps, checkpoints every 20: killed inside stage 2


def _config(name, arg):
  path = os.path.join(REPO, "experiments", "configs", "pdns", f"{name}.py")
  spec = importlib.util.spec_from_file_location(f"pdns_cfg_{name}", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def test_lattice_log_prob_matches_enumerated_tables():
  ising = discrete_targets.ising(3, BETA, h=FIELD)
  x = jnp.asarray(ising.states())
  got = method.lattice_log_prob(x, size=3, beta=BETA, model="ising", h=FIELD)
  np.testing.assert_allclose(np.asarray(got), np.asarray(ising.log_table), rtol=1e-5, atol=1e-5)
  potts = discrete_targets.potts(2, 3, 0.7)  # L = 2: every pair counted twice
  x = jnp.asarray(potts.states())
  got = method.lattice_log_prob(x, size=2, beta=0.7, model="potts")
  np.testing.assert_allclose(np.asarray(got), np.asarray(potts.log_table), rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def ising_run(tmp_path_factory):
  cfg = _config("ising", TRAIN_ARG)
  m = method.PDNSMethod(cfg)
  untrained = m.evaluate(jax.jit(m.init_state)(jax.random.PRNGKey(0)))
  res = trainer.train(m, cfg, str(tmp_path_factory.mktemp("ising") / "run"))
  return m, untrained, res


def test_ising_eval_keys_and_log_z_matches_enumeration(ising_run):
  m, untrained, res = ising_run
  ev = res.eval_metrics
  exact = discrete_targets.ising(3, BETA, h=FIELD)
  for key in (
    "eval/log_z",
    "eval/elbo",
    "eval/ess",
    "eval/path_kl",
    "eval/magnetization",
    "eval/p_neg",
    "eval/log_z_true",
    "eval/log_z_rel_ref",
    "eval/magnetization_true",
  ):
    assert key in ev and math.isfinite(ev[key]), (key, ev)
  # The logged truth (row transfer matrix) agrees with the enumerated table.
  assert ev["eval/log_z_true"] == pytest.approx(float(exact.log_z), abs=1e-4)
  assert ev["eval/log_z_rel_ref"] == pytest.approx(ev["eval/log_z"] - 9 * math.log(2), abs=1e-5)
  # log Z^ within 5 delta-method standard errors sqrt((1/ESS - 1)/N) plus 0.02 for the
  # O(Var W / N) bias of the log of a ratio estimator.
  n = int(m.config.eval.num_samples)
  se = math.sqrt((1 / ev["eval/ess"] - 1) / n)
  assert abs(ev["eval/log_z"] - float(exact.log_z)) < 5 * se + 0.02, ev
  # Training helped: the untrained (uniform) sampler's ESS and ELBO are lower.
  assert ev["eval/ess"] > 2 * untrained["eval/ess"], (ev, untrained)
  assert ev["eval/elbo"] > untrained["eval/elbo"], (ev, untrained)
  # Magnetisation E|M| / D of the exact law, by enumeration.
  s = 2.0 * exact.states() - 1.0
  abs_mag = float(np.sum(np.exp(exact.log_probs()) * np.abs(s.sum(1))) / 9)
  assert ev["eval/magnetization_true"] == pytest.approx(abs_mag, abs=1e-4)
  assert 0 <= ev["eval/magnetization"] <= 1 and 0 <= ev["eval/p_neg"] <= 1
  # eval/mag_tv: TV between the law of M of the eval samples (the same eval key) and the exact
  # law of M by enumeration.
  p = np.exp(exact.log_probs())
  exact_law = np.bincount(exact.states().sum(1), weights=p, minlength=10)
  x = np.asarray(m.sample(res.state)[0])
  sampled_law = np.bincount(x.sum(1), minlength=10) / x.shape[0]
  assert ev["eval/mag_tv"] == pytest.approx(0.5 * np.abs(sampled_law - exact_law).sum(), abs=1e-6)


def test_stage_metrics_follow_the_schedule(ising_run):
  m, _, res = ising_run
  rows = metrics_lib.read_jsonl(os.path.join(res.workdir, "metrics.jsonl"))
  train_rows = [r for r in rows if "stage/c" in r]
  assert train_rows
  per_stage = {}
  for r in train_rows:
    per_stage[int(r["stage/index"])] = r
  assert sorted(per_stage) == [1, 2, 3, 4]  # 96 steps of 24-step stages
  lam = [per_stage[k]["stage/lambda"] for k in sorted(per_stage)]
  c = [per_stage[k]["stage/c"] for k in sorted(per_stage)]
  assert all(0 < ck < 1 for ck in c[:3]) and c[3] == 1.0
  assert np.all(np.diff(lam) <= 0) and lam[-1] == 0.0
  for k in (1, 2, 3):  # adaptive stages met KL^ = eps (or flagged)
    r = per_stage[k]
    assert r["prox/flag"] != 0 or abs(r["prox/kl_hat"] - 0.5) < 1e-3, r
    assert 0 < r["stage/ess"] <= 1
  # lambda_k = prod (1 - c_i) over the proximal stages.
  assert lam[2] == pytest.approx(np.prod([1 - ck for ck in c[:3]]), rel=1e-5)


def test_gmm2d_eval_logs_mode_weights():
  cfg = _config("gmm2d", "smoke")
  m = method.PDNSMethod(cfg)
  ev = m.evaluate(jax.jit(m.init_state)(jax.random.PRNGKey(0)))
  for key in (
    "eval/log_z",
    "eval/elbo",
    "eval/ess",
    "eval/log_z_true",
    "eval/mode_weight_0",
    "eval/mode_weight_1",
    "eval/mode_weight_tv",
  ):
    assert key in ev and math.isfinite(ev[key]), (key, ev)
  assert ev["eval/log_z_true"] == pytest.approx(1.5)
  w = np.array([ev["eval/mode_weight_0"], ev["eval/mode_weight_1"]])
  assert w.sum() == pytest.approx(1.0, abs=1e-6)
  assert ev["eval/mode_weight_tv"] == pytest.approx(0.5 * np.abs(w - [0.3, 0.7]).sum(), abs=1e-6)


def _tree(x):
  return jax.tree.map(np.asarray, jax.device_get(x))


def test_resume_mid_stage_is_bitwise_exact(ising_run, tmp_path):
  # Oracle: the fixture's uninterrupted run of the same config. Killed after step 30 (inside
  # stage 2), the run resumes from the step-20 checkpoint (inside stage 1) and crosses the stage
  # boundaries at steps 24, 48 and 72 from restored extras (buffer, schedule, epoch order).
  _, _, ref = ising_run
  cfg = _config("ising", TRAIN_ARG)
  work = str(tmp_path / "killed")
  with pytest.raises(Kill):
    trainer.train(method.PDNSMethod(cfg), cfg, work, hooks=(kill_at(KILL_STEP),))
  resumed = trainer.train(method.PDNSMethod(cfg), cfg, work)
  assert resumed.resumed_from == 20
  for a, b in (
    (ref.state.params, resumed.state.params),
    (ref.state.opt_state, resumed.state.opt_state),
    (ref.state.extras, resumed.state.extras),
  ):
    la, lb = jax.tree.leaves(_tree(a)), jax.tree.leaves(_tree(b))
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
      np.testing.assert_array_equal(x, y)
  assert metrics_lib.read_jsonl(
    os.path.join(ref.workdir, "metrics.jsonl")
  ) == metrics_lib.read_jsonl(os.path.join(work, "metrics.jsonl"))


def test_fit_loop_runs_the_same_step_as_the_method(ising_run):
  # ``StageSampler.fit`` scans the very step the trainer runs: with the same root key the stage-1
  # buffer (from the same initial parameters) and hence c_1, KL^ and the buffer ESS agree to
  # float rounding, and the schedule has the same stages.
  m, _, res = ising_run
  fit = m.sampler.fit(m.prox, jax.random.PRNGKey(int(m.config.seed)))
  rows = metrics_lib.read_jsonl(os.path.join(res.workdir, "metrics.jsonl"))
  per_stage = {int(r["stage/index"]): r for r in rows if "stage/c" in r}
  assert [h["stage"] for h in fit.history] == sorted(per_stage)
  assert [h["refine"] for h in fit.history] == [
    bool(per_stage[k]["stage/refine"]) for k in sorted(per_stage)
  ]
  h1, r1 = fit.history[0], per_stage[1]
  for key in ("stage/c", "stage/lambda", "prox/kl_hat", "stage/ess", "stage/log_z"):
    assert h1[key] == pytest.approx(r1[key], rel=1e-5, abs=1e-6), key

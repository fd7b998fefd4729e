"""Reference rows (truth, identity, independent) beside a sampler's scores.

Oracles: exact enumeration of the tiny enumerable preset (D = 2, S = 6: 36 states), computed here
in float64 numpy from the closed-form plan (``metrics.exact_joint_log_probs``), and facts about
the three reference maps that hold by construction:

* the identity's conditional shape at a point is the truth's probability of leaving each
  coordinate where it is (TV(p, point mass at a) = 1 - p(a)), its exact TV is
  E_{p_0}[1 - pi*(x_0 | x_0)], its KLs are infinite, and its SB perplexity is a function of the
  test sources alone;
* the independent coupling's exact KL is the plan's mutual information and its exact TV is
  E_{p_0} TV(pi*(. | x_0), p_1);
* the log of the truth's SB perplexity is an unbiased estimate of the mean per-coordinate
  conditional entropy, and the independent coupling's of a cross-entropy that is larger;
* the truth's conditional shape is 1 - E TV(two empirical histograms of n draws of one law),
  at least 1 - sqrt(S / (2 n)) in expectation.
"""

import math

import jax
import numpy as np
import pytest

from iclr26_jax import dsb
from iclr26_jax.dsb import metrics as M
from experiments import dsb_table as runner
from iclr26_jax.dsb import evaluation

TINY = "tiny_d2_s6_uniform"
SIZES = dict(num_test=2048, num_points=8, cond_samples=500)


@pytest.fixture(scope="module")
def exact():
  """Exact laws of the tiny instance: p_0, pi*(y | x_0), p_1 and the per-coordinate
  conditionals pi*^d(. | x_0), all (float64) by enumeration."""
  bench = dsb.Benchmark.from_preset(TINY)
  s, d = bench.num_categories, bench.dim
  states, log_p0, log_cond = M.exact_joint_log_probs(bench)
  states = np.asarray(states)
  p0 = np.exp(np.asarray(log_p0, np.float64))
  cond = np.exp(np.asarray(log_cond, np.float64))  # (M, M), rows x_0, columns y
  cond /= cond.sum(-1, keepdims=True)
  p1 = p0 @ cond
  grid = cond.reshape((-1,) + (s,) * d)
  marg = np.stack(
    [grid.sum(axis=tuple(1 + j for j in range(d) if j != i)) for i in range(d)], axis=1
  )  # (M, D, S)
  p1_marg = np.einsum("m,mds->ds", p0, marg)
  index = {tuple(x): i for i, x in enumerate(states)}
  return dict(
    bench=bench,
    states=states,
    p0=p0,
    cond=cond,
    p1=p1,
    marg=marg,
    p1_marg=p1_marg,
    index=index,
  )


@pytest.fixture(scope="module")
def refs():
  return dsb.reference_scores(TINY, key=jax.random.key(0), **SIZES)


def _ctx():
  """The evaluation set ``reference_scores`` draws (the same arguments)."""
  return evaluation.prepare_preset(
    TINY,
    0,
    num_test=SIZES["num_test"],
    num_points=SIZES["num_points"],
    cond_samples=SIZES["cond_samples"],
    eval_seed=0,
  )


def test_every_metric_has_a_direction():
  assert set(dsb.METRIC_DIRECTIONS) == set(evaluation.METRICS)
  assert dsb.METRIC_DIRECTIONS["sb_perplexity"] == "truth"
  assert {m for m, d in dsb.METRIC_DIRECTIONS.items() if d == "lower"} == {
    "traj_kl_fwd",
    "traj_kl_rev",
    "mc_kl",
    "exact_kl",
    "exact_tv",
  }


def test_exact_metrics_of_the_reference_rows(refs, exact):
  assert sorted(refs) == ["identity", "independent", "truth"]
  p0, cond, p1 = exact["p0"], exact["cond"], exact["p1"]
  truth, ident, indep = refs["truth"], refs["identity"], refs["independent"]
  # The truth against itself: zero KL and TV; the MC KL is log pi* - log pi* on each draw.
  assert abs(truth["exact_kl"]) < 1e-5 and abs(truth["exact_tv"]) < 1e-5
  assert abs(truth["mc_kl"]) < 1e-6
  # The identity: a point mass at x_0, infinitely far in KL, TV = E[1 - pi*(x_0 | x_0)].
  assert ident["exact_kl"] == math.inf and ident["mc_kl"] == math.inf
  np.testing.assert_allclose(ident["exact_tv"], p0 @ (1.0 - np.diag(cond)), rtol=1e-4)
  # The independent coupling: KL = mutual information, TV = E_{p_0} TV(pi*(. | x_0), p_1).
  with np.errstate(divide="ignore", invalid="ignore"):
    terms = np.where(cond > 0, cond * np.log(cond / p1[None, :]), 0.0)
  mi = p0 @ terms.sum(-1)
  np.testing.assert_allclose(indep["exact_kl"], mi, rtol=1e-3)
  np.testing.assert_allclose(indep["exact_tv"], p0 @ (0.5 * np.abs(cond - p1).sum(-1)), rtol=1e-3)
  assert mi > 0.3  # a coupling worth learning: the trivial maps are far from the truth
  # The MC KL of the independent coupling estimates the same mutual information.
  assert abs(indep["mc_kl"] - mi) < 0.1


def test_conditional_shape_scale(refs, exact):
  """Truth near 1 (up to sampling noise), identity at the truth's stay-put probability, both
  trivial maps clearly below the truth."""
  s, n = exact["bench"].num_categories, SIZES["cond_samples"]
  truth, ident, indep = refs["truth"], refs["identity"], refs["independent"]
  assert truth["cond_shape"] > 1.0 - math.sqrt(s / (2 * n))
  assert truth["cond_shape"] > max(ident["cond_shape"], indep["cond_shape"]) + 0.2
  assert truth["cond_trend"] > max(ident["cond_trend"], indep["cond_trend"]) + 0.2
  # identity: cond_shape = mean over points and coordinates of the truth's empirical frequency of
  # x_0^d, whose expectation is pi*^d(x_0^d | x_0) (binomial error, 4 standard errors).
  points = np.asarray(_ctx().points)
  stay = np.array(
    [[exact["marg"][exact["index"][tuple(x)], d, x[d]] for d in range(len(x))] for x in points]
  )
  se = math.sqrt(np.sum(stay * (1 - stay)) / n) / stay.size
  assert abs(ident["cond_shape"] - stay.mean()) < 4 * se + 1e-6


def test_sb_perplexity_scale(refs, exact):
  """The truth's value is exp(mean conditional entropy) within sampling error; the identity's is
  fixed by the test sources; the independent coupling's exceeds the truth's."""
  marg, p0, p1_marg, index = exact["marg"], exact["p0"], exact["p1_marg"], exact["index"]
  n = SIZES["num_test"]
  log_marg = np.log(marg)  # (M, D, S)
  ent = -(marg * log_marg).sum(-1).mean(-1)  # (M,) mean_d H(pi*^d(. | x_0))
  # Variance of one pair's mean_d -log pi*^d(y^d | x_0) under the plan, by enumeration.
  states, cond = exact["states"], exact["cond"]
  d = states.shape[1]
  loss = -np.stack([log_marg[:, j, states[:, j]] for j in range(d)], -1).mean(-1)  # (M_x, M_y)
  mean = p0 @ (cond * loss).sum(-1)
  var = p0 @ (cond * loss**2).sum(-1) - mean**2
  np.testing.assert_allclose(mean, p0 @ ent, rtol=1e-9)
  se = math.sqrt(var / n)
  assert abs(math.log(refs["truth"]["sb_perplexity"]) - p0 @ ent) < 4 * se
  # Independent: y ~ p_1 whatever x_0; expected log value = the cross-entropy, above p0 @ ent.
  ce = -(p1_marg[None] * log_marg).sum(-1).mean(-1)  # (M,)
  loss_ind = (exact["p1"][None, :] * loss).sum(-1)
  var_ind = p0 @ (exact["p1"][None, :] * loss**2).sum(-1) - (p0 @ loss_ind) ** 2
  np.testing.assert_allclose(p0 @ loss_ind, p0 @ ce, rtol=1e-9)
  assert p0 @ ce > p0 @ ent + 0.1
  assert abs(math.log(refs["independent"]["sb_perplexity"]) - p0 @ ce) < 4 * math.sqrt(var_ind / n)
  # Identity: y = x_0, so the value is exp(mean_{b,d} -log pi*^d(x_0^d | x_0)) on the test sources.
  x0 = np.asarray(_ctx().x0)
  rows = np.array([index[tuple(x)] for x in x0])
  picked = np.stack([log_marg[rows, j, x0[:, j]] for j in range(d)], -1)
  np.testing.assert_allclose(refs["identity"]["sb_perplexity"], np.exp(-picked.mean()), rtol=1e-4)


def test_evaluate_shows_the_reference_rows(refs, exact):
  bench = exact["bench"]
  key = jax.random.key(0)
  scores = dsb.evaluate(bench, lambda k, x0: x0, key=key, references=True, **SIZES)
  assert isinstance(scores, dict) and isinstance(scores, dsb.Scores)
  assert scores.references == refs  # the same evaluation set and keys
  # The sampler is the identity: its scores are the identity row's, entry by entry.
  for m, v in scores.items():
    if m != "sb_perplexity_truth":
      assert v == refs["identity"][m], m
  # The truth row is evaluate() of the exact plan with its log-density.
  truth = dsb.evaluate(
    bench, bench.sample_solution, key=key, log_prob_fn=bench.plan_log_prob, **SIZES
  )
  assert {m: v for m, v in truth.items() if m != "sb_perplexity_truth"} == refs["truth"]
  assert truth.references == {}
  # The printed summary: one line per metric, the sampler beside the three reference columns.
  text = str(scores)
  assert text == scores.summary()
  lines = text.splitlines()
  assert lines[0].split() == ["metric", "sampler", "truth", "identity", "independent", "better"]
  by_metric = {ln.split()[0]: ln.split() for ln in lines[1:] if ln.split()[0] in evaluation.METRICS}
  assert list(by_metric) == [m for m in evaluation.METRICS if m in refs["truth"]]
  assert by_metric["cond_shape"][1:5] == [
    f"{v:.4g}"
    for v in (scores["cond_shape"], *(refs[r]["cond_shape"] for r in evaluation.REFERENCES))
  ]
  assert by_metric["exact_kl"][1:5] == [
    "—",
    f"{refs['truth']['exact_kl']:.4g}",
    "inf",
    f"{refs['independent']['exact_kl']:.4g}",
  ]
  assert " ".join(by_metric["sb_perplexity"][5:]) == "closest to the truth's"
  assert " ".join(by_metric["cond_shape"][5:]) == "higher; truth ~ 1"
  assert " ".join(by_metric["exact_kl"][5:]) == "lower; truth = 0"
  assert "references=True" in str(truth) and "references=True" not in text


def test_run_table_puts_reference_rows_first(exact):
  result = runner.run_table(
    ["independent"],
    [TINY],
    [0],
    references=True,
    progress=None,
    num_test=256,
    num_points=2,
    cond_samples=100,
    num_traj=32,
  )
  # Named once each: independent is both a reference and the solver asked for.
  assert [r["solver"] for r in result["rows"]] == ["truth", "identity", "independent"]
  ident = result["rows"][1]
  assert ident["mc_kl"] == (math.inf, 0.0) and ident["exact_kl"] == (math.inf, 0.0)
  assert ident["traj_kl_fwd"] is None  # no transitions: not defined
  np.testing.assert_allclose(
    ident["exact_tv"][0], exact["p0"] @ (1.0 - np.diag(exact["cond"])), rtol=1e-4
  )
  table = result["table"]
  assert "| tiny_d2_s6_uniform | identity |" in table and "∞" in table
  assert "closest to the truth row's value is best" in table and "Reference rows:" in table
  plain = runner.run_table(
    ["independent"], [TINY], [0], progress=None, num_test=256, num_points=2, cond_samples=100
  )
  assert [r["solver"] for r in plain["rows"]] == ["independent"]  # no references unless asked

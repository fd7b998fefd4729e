"""Known-answer tests of the discrete PDNS sampler on enumerable targets.

PDNS: Guo, Choi, Zhu, Tao, Chen, ICLR 2026; reference code github.com/AlexandreGUO2001/PDNS.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.pdns import discrete, discrete_targets


def _random_params(sampler, seed, scale=0.7):
  """Denoiser parameters with every leaf perturbed (a non-uniform, non-trivial model)."""
  params = sampler.init_params(jax.random.PRNGKey(seed))
  leaves, tree = jax.tree_util.tree_flatten(params)
  keys = jax.random.split(jax.random.PRNGKey(seed + 100), len(leaves))
  leaves = [
    l + scale * jax.random.normal(k, (l.size,)).reshape(l.shape) for l, k in zip(leaves, keys)
  ]
  return jax.tree_util.tree_unflatten(tree, leaves)


def test_path_probabilities_by_enumerating_all_orders_and_tokens():
  dim, q = 3, 2
  tgt = discrete_targets.random_table(0, dim, q, scale=1.5)
  sampler = discrete.DiscreteSampler(tgt.log_prob_unnorm, dim, q, hidden=16)
  params = _random_params(sampler, 1)
  orders, states = discrete.enumerate_paths(dim, q)  # D! q^D = 48 paths
  assert orders.shape == (math.factorial(dim) * q**dim, dim)
  ell = np.asarray(
    discrete.path_log_ratio(sampler.log_probs, params, jnp.asarray(states), jnp.asarray(orders), q),
    np.float64,
  )
  r = np.asarray(discrete.discrete_reward(tgt.log_prob_unnorm, jnp.asarray(states), q), np.float64)
  # P^theta(path) = (1/D!) prod s = (1/D!) exp(-l - D log q).
  log_path = -ell - dim * math.log(q) - math.log(math.factorial(dim))
  p_path = np.exp(log_path)
  assert abs(p_path.sum() - 1.0) < 1e-5
  # sum_paths P^theta e^{W} = Z exactly (W = l + r): catches the -log q term and the sign of Eq. 4.
  z_hat = np.sum(p_path * np.exp(ell + r))
  assert abs(math.log(z_hat) - float(tgt.log_z)) < 1e-5
  # Marginalising the paths over orders equals the forward recursion of the model's joint.
  idx = np.asarray(discrete_targets.state_index(jnp.asarray(states), q))
  p_joint = np.bincount(idx, weights=p_path, minlength=q**dim)
  p_rec = np.exp(sampler.exact_log_marginal(params))
  np.testing.assert_allclose(p_rec, p_joint, atol=1e-6)
  assert np.max(np.abs(p_joint - 1.0 / q**dim)) > 0.02  # the model is not uniform

  # The rollout: its l equals the teacher-forced l of its own (x, order), its orders are
  # permutations, and its terminal frequencies match the exact joint (5 binomial SEs).
  n = 8000
  out = discrete.ctmc_rollout(sampler.log_probs, params, jax.random.PRNGKey(2), n, dim, q)
  np.testing.assert_array_equal(
    np.sort(np.asarray(out.order), -1), np.broadcast_to(np.arange(dim), (n, dim))
  )
  ell_tf = discrete.path_log_ratio(sampler.log_probs, params, out.x, out.order, q)
  np.testing.assert_allclose(np.asarray(out.log_ratio), np.asarray(ell_tf), atol=1e-5)
  freq = np.bincount(np.asarray(discrete_targets.state_index(out.x, q)), minlength=q**dim) / n
  se = np.sqrt(p_joint * (1 - p_joint) / n)
  assert np.all(np.abs(freq - p_joint) < 5 * se), (freq, p_joint)


def test_exact_conditionals_give_constant_weights_and_exact_log_z():
  tgt = discrete_targets.potts(2, 3, beta=0.8)  # D = 4, q = 3, 81 states
  dim, q = tgt.dim, tgt.q

  def exact(params, z):
    del params
    return tgt.conditional_log_probs(z)

  n = 4096
  out = jax.jit(lambda k: discrete.ctmc_rollout(exact, None, k, n, dim, q))(jax.random.PRNGKey(0))
  w = np.asarray(
    out.log_ratio + discrete.discrete_reward(tgt.log_prob_unnorm, out.x, q), np.float64
  )
  # W = log Z for every path (float32 round-off of D log-probs only).
  np.testing.assert_allclose(w, float(tgt.log_z), atol=2e-4)
  assert np.std(w) < 1e-4
  # The exact conditionals make the order-marginalised model equal to pi.
  np.testing.assert_allclose(
    discrete.exact_model_log_marginal(exact, None, dim, q), tgt.log_probs(), atol=1e-5
  )
  # Exact one-site marginals vs the rollout's (5 binomial SEs).
  marg = tgt.marginals()
  freq = np.asarray(jax.nn.one_hot(out.x, q)).mean(0)
  assert np.all(np.abs(freq - marg) < 5 * np.sqrt(marg * (1 - marg) / n))
  # Enumeration cross-check of log Z and the marginals for this Potts model.
  states = tgt.states()
  e = -np.sum(
    (states == states[:, [1, 0, 3, 2]]).astype(int) + (states == states[:, [2, 3, 0, 1]]), -1
  )
  assert abs(float(tgt.log_z) - np.logaddexp.reduce(-0.8 * e)) < 1e-5
  np.testing.assert_allclose(marg, 1.0 / 3.0, atol=1e-9)  # colour symmetry


def _subsets(dim):
  """All non-empty masks (S, D) bool and their exact m-form weight 1 / (D C(D,|S|) |S|)."""
  masks = np.asarray(list(itertools.product([False, True], repeat=dim)))[1:]
  m = masks.sum(-1)
  coef = 1.0 / (dim * np.asarray([math.comb(dim, k) for k in m]) * m)
  return masks, coef


def _exact_loss(log_probs_fn, params, x, w, q):
  """E over masks of the WDCE loss (both formulations), by enumerating all masks: scalar."""
  masks, coef = _subsets(x.shape[1])
  b, s = x.shape[0], masks.shape[0]
  xr = jnp.repeat(x, s, 0)
  mr = jnp.tile(jnp.asarray(masks), (b, 1))
  nll = discrete.masked_nll(log_probs_fn, params, xr, mr, q).reshape(b, s)
  return jnp.mean(w * jnp.sum(jnp.asarray(coef, jnp.float32) * nll, -1))


def test_exact_conditionals_have_zero_expected_gradient():
  tgt = discrete_targets.potts(2, 3, beta=0.8)
  dim, q = tgt.dim, tgt.q
  states = jnp.asarray(tgt.states())
  pi = jnp.asarray(np.exp(tgt.log_probs()), jnp.float32)  # exact samples, enumerated

  def fn(theta, z):  # exact conditionals tilted by a per-(site, token) offset theta (D, q)
    return jax.nn.log_softmax(tgt.conditional_log_probs(z) + theta, -1)

  def expected(theta):  # E_{x~pi} E_masks[loss]; uniform weights, pi as probability weights
    return _exact_loss(fn, theta, states, pi * states.shape[0], q)

  g0 = jax.grad(expected)(jnp.zeros((dim, q)))
  assert float(jnp.max(jnp.abs(g0))) < 1e-5
  theta = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (dim * q,)).reshape(dim, q)
  assert float(jnp.max(jnp.abs(jax.grad(expected)(theta)))) > 1e-2
  assert float(expected(theta)) > float(expected(jnp.zeros((dim, q))))


def test_lambda_and_m_formulations_and_antithetic_masks_are_unbiased():
  dim, q, b, r_rep, k_rep = 4, 3, 6, 8, 300
  sampler = discrete.DiscreteSampler(lambda x: jnp.zeros(x.shape[:-1]), dim, q, hidden=16)
  params = _random_params(sampler, 3)
  x = jax.random.randint(jax.random.PRNGKey(4), (b * dim,), 0, q).reshape(b, dim)
  w = jnp.asarray([0.2, 1.5, 0.7, 1.0, 2.0, 0.6])
  exact = float(_exact_loss(sampler.log_probs, params, x, w, q))
  keys = jax.random.split(jax.random.PRNGKey(5), k_rep)
  means, sds = {}, {}
  for form in discrete.FORMULATIONS:
    for anti in (False, True):
      est = jax.jit(
        jax.vmap(
          lambda k: discrete.wdce_loss(
            params,
            sampler.log_probs,
            k,
            x,
            w,
            q=q,
            formulation=form,
            replicates=r_rep,
            antithetic=anti,
          )[0]
        )
      )(keys)
      est = np.asarray(est, np.float64)
      means[form, anti], sds[form, anti] = est.mean(), est.std(ddof=1)
      # k_rep independent estimates: the mean is within 5 standard errors of the exact value.
      assert abs(est.mean() - exact) < 5 * est.std(ddof=1) / math.sqrt(k_rep), (
        form,
        anti,
        est.mean(),
        exact,
      )
  # The two formulations agree with each other too (combined SE).
  se = math.sqrt(sds["lambda", False] ** 2 + sds["m", False] ** 2) / math.sqrt(k_rep)
  assert abs(means["lambda", False] - means["m", False]) < 5 * se
  # The check has power: a lambda-form that dropped the 1/lambda factor would have expectation
  # with per-mask weight int lambda^m (1 - lambda)^(D-m) dlambda / D = m! (D-m)! / ((D+1)! D),
  # far more than 5 standard errors from the exact value.
  masks, coef = _subsets(dim)
  m = masks.sum(-1)
  wrong = np.asarray([math.factorial(k) * math.factorial(dim - k) for k in m]) / (
    math.factorial(dim + 1) * dim
  )
  nll = discrete.masked_nll(
    sampler.log_probs, params, jnp.repeat(x, len(m), 0), jnp.tile(jnp.asarray(masks), (b, 1)), q
  ).reshape(b, len(m))
  biased = float(jnp.mean(w * jnp.sum(jnp.asarray(wrong, jnp.float32) * nll, -1)))
  assert abs(biased - exact) > 20 * sds["lambda", False] / math.sqrt(k_rep), (biased, exact)


def test_bad_inputs_raise_value_errors():
  tgt = discrete_targets.random_table(0, 3, 2)
  s = discrete.DiscreteSampler(tgt.log_prob_unnorm, 3, 2, hidden=8)
  p = s.init_params(jax.random.PRNGKey(0))
  x = jnp.zeros((4, 3), jnp.int32)
  with pytest.raises(ValueError, match="q must be >= 2"):
    discrete.DiscreteSampler(tgt.log_prob_unnorm, 3, 1)
  with pytest.raises(ValueError, match="formulation"):
    discrete.DiscreteSampler(tgt.log_prob_unnorm, 3, 2, formulation="mu")
  with pytest.raises(ValueError, match="even number of replicates"):
    discrete.DiscreteSampler(tgt.log_prob_unnorm, 3, 2, replicates=3, antithetic=True)
  with pytest.raises(ValueError, match="weights must have shape"):
    discrete.wdce_loss(p, s.log_probs, jax.random.PRNGKey(0), x, jnp.ones(5), q=2)
  with pytest.raises(ValueError, match="x must have shape"):
    discrete.wdce_loss(p, s.log_probs, jax.random.PRNGKey(0), x[0], jnp.ones(4), q=2)
  with pytest.raises(ValueError, match="x and order"):
    discrete.path_log_ratio(s.log_probs, p, x, jnp.zeros((4, 2), jnp.int32), 2)
  with pytest.raises(ValueError, match="z must have shape"):
    s.log_probs(p, jnp.zeros((4, 5), jnp.int32))
  with pytest.raises(ValueError, match="n must be >= 1"):
    discrete.ctmc_rollout(s.log_probs, p, jax.random.PRNGKey(0), 0, 3, 2)
  with pytest.raises(ValueError, match="too large to enumerate"):
    discrete.exact_model_log_marginal(s.log_probs, p, 12, 2)
  with pytest.raises(ValueError, match="too large to enumerate"):
    discrete_targets.ising(5, 0.4)
  with pytest.raises(ValueError, match="log_table must have shape"):
    discrete_targets.EnumerableTarget.from_log_table(np.zeros(7), 3, 2)
  with pytest.raises(ValueError, match="integer tokens"):
    tgt.log_prob_unnorm(jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
    tgt.log_prob_unnorm(jnp.zeros((2, 4), jnp.int32))

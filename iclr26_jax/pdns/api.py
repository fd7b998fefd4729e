"""The PDNS entry point: fit a sampler to a density of your own.

W. Guo, J. Choi, Y. Zhu, M. Tao, Y. Chen, "Proximal Diffusion Neural Sampler", ICLR 2026
(arXiv 2510.03824); reference PyTorch code github.com/AlexandreGUO2001/PDNS.

``fit_sampler`` (a log density on R^dim; ``continuous.ContinuousSampler`` from an OU reference)
and ``fit_discrete_sampler`` (a log probability on {0..num_states-1}^num_sites;
``discrete.DiscreteSampler``) train by the proximal stage loop (``proximal.run_stages``) and
return a ``FittedSampler`` (``.sample``, ``.log_z``, ``.ess``, ``.history``). The defaults are
the settings the project's claims use; ``CONTINUOUS_DEFAULTS`` and ``DISCRETE_DEFAULTS`` list
every option, and an unknown name raises ``ValueError`` naming the closest valid one. The
algorithm and the defaults: docs/methods/pdns.md ("The algorithm").
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from iclr26_jax.pdns import continuous, discrete, metrics, proximal, references

__all__ = [
  "CONTINUOUS_DEFAULTS",
  "DISCRETE_DEFAULTS",
  "FittedSampler",
  "fit_sampler",
  "fit_discrete_sampler",
]

_PROX_FIELDS = tuple(f.name for f in dataclasses.fields(proximal.ProxConfig))

# Shared by both samplers: the stage loop (``proximal.ProxConfig``) and the evaluation.
_COMMON = dict(
  dataclasses.asdict(proximal.ProxConfig()),
  epsilon=1.0,
  buffer_size=2048,
  batch_size=256,
  ema_decay=0.99,
  learning_rate=1e-3,
  eval_samples=4096,  # paths of the final rollout behind .log_z and .ess
  progress=False,  # print one line per stage
  callback=None,  # called with each stage's history dict
)

CONTINUOUS_DEFAULTS = dict(
  _COMMON,
  # the OU reference dX = -alpha_t X / 2 dt + sqrt(alpha_t) sigma_bar dW, stationary N(0,
  # sigma_bar^2 I): sigma_bar should cover the target's support
  sigma_bar=3.0,
  alpha_max=20.0,
  alpha_min=0.1,
  schedule="linear_decreasing",
  num_steps=100,  # Euler-Maruyama steps of every rollout
  hidden=128,  # control MLP width
  depth=2,  # control MLP hidden layers
  param="control",
  loss="control",
  t_max=0.999,
  epochs_per_stage=20,
  num_stages=10,
  refine_stages=3,
)
"""Every option of ``fit_sampler`` and its default (the two-mode mixture claim's settings)."""

DISCRETE_DEFAULTS = dict(
  _COMMON,
  hidden=64,  # denoiser MLP width
  depth=2,  # denoiser MLP hidden layers
  formulation="lambda",
  replicates=8,
  antithetic=True,
  epsilon=0.3,
  # 16, not the 4 x 4 claim's 4: 4 epochs per stage are too few to learn at 8 x 8
  epochs_per_stage=16,
  num_stages=30,
  refine_stages=3,
  weighting="weight",
  normalize="minibatch",
)
"""Every option of ``fit_discrete_sampler`` and its default (the Ising log Z claim's settings)."""


def _options(defaults: dict, options: dict, fn: str) -> dict:
  for name in options:
    if name not in defaults:
      close = difflib.get_close_matches(name, list(defaults), n=1)
      hint = f"; did you mean {close[0]!r}?" if close else ""
      raise ValueError(
        f"{fn}: unknown option {name!r}{hint} Valid options: {', '.join(sorted(defaults))}"
      )
  return {**defaults, **options}


def _prox(opts: dict, fn: str) -> proximal.ProxConfig:
  kw = {k: opts[k] for k in _PROX_FIELDS}
  kw["c_list"] = tuple(kw["c_list"])
  try:
    return proximal.ProxConfig(**kw)
  except ValueError as e:
    raise ValueError(f"{fn}: {e}") from None


def _check_key(key, fn: str) -> jax.Array:
  typed = isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
  raw = hasattr(key, "shape") and tuple(key.shape) == (2,) and key.dtype == jnp.uint32
  if not (typed and key.shape == ()) and not raw:
    raise ValueError(f"{fn}: key must be a PRNG key (jax.random.key / PRNGKey); got {key!r}")
  return key


def _check_scalar_fn(fn_name: str, arg: str, f: Callable, spec: jax.ShapeDtypeStruct) -> None:
  """f on one point ``spec`` must give a float scalar."""
  try:
    out = jax.eval_shape(f, spec)
  except Exception as e:  # noqa: BLE001 - the user's function failed on one point: say so
    raise ValueError(
      f"{fn_name}: {arg} must map one point of shape {spec.shape} ({spec.dtype}) to a scalar; "
      f"calling it on such a point raised {type(e).__name__}: {e}"
    ) from e
  if not hasattr(out, "shape") or out.shape != () or not jnp.issubdtype(out.dtype, jnp.floating):
    got = (out.shape, out.dtype) if hasattr(out, "shape") else type(out).__name__
    raise ValueError(
      f"{fn_name}: {arg} must return a float scalar for one point of shape {spec.shape}; got {got}"
    )


def _positive_int(value, name: str, fn: str) -> int:
  if isinstance(value, bool) or int(value) != value or int(value) < 1:
    raise ValueError(f"{fn}: {name} must be a positive integer; got {value!r}")
  return int(value)


def _stage_printer(total: int) -> Callable[[dict], None]:
  def show(rec: dict) -> None:
    print(
      f"PDNS stage {rec['stage']}/{total}{' (refine)' if rec['refine'] else ''}: "
      f"c={rec['stage/c']:.3f} lambda={rec['stage/lambda']:.3f} "
      f"ess={rec['stage/ess']:.3f} log_z={rec['stage/log_z']:.4f} "
      f"loss={rec['loss/wdce']:.4g}",
      flush=True,
    )

  return show


@dataclasses.dataclass
class FittedSampler:
  """A trained PDNS sampler (``fit_sampler`` / ``fit_discrete_sampler``).

  Attributes:
    sampler: the ``ContinuousSampler`` or ``DiscreteSampler`` (its ``rollout`` gives
      ``(x, l, r)``).
    params: the final EMA network parameters.
    log_z: log Z^ = log mean exp(W), W = l + r, on ``eval_samples`` fresh paths: an estimate of
      log of the integral (or sum) of exp(log density) (float).
    ess: normalised ESS of their path weights, in (0, 1] (float).
    elbo: mean path weight, a lower bound on log Z in expectation (float).
    history: one dict per stage (``proximal.ProxResult.history``).
    shape: the shape of one sample, ``(dim,)`` or ``(num_sites,)``.
  """

  sampler: Any
  params: Any
  log_z: float
  ess: float
  elbo: float
  history: list
  shape: tuple

  def __post_init__(self):
    self._rollout = jax.jit(self.sampler.rollout, static_argnums=2)

  def sample_weighted(self, key: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """``n`` model samples and their log importance weights.

    Args:
      key: PRNG key.
      n: number of samples.

    Returns:
      ``(x, log_w)``: x ``(n, dim)`` float (continuous) or ``(n, num_sites)`` int32 (discrete);
      log_w ``(n,)``, W = l + r with E[exp W] = Z, so ``softmax(log_w)`` reweights x to the target.
    """
    n = _positive_int(n, "n", "sample")
    x, ell, r = self._rollout(self.params, key, n)
    return x, ell + r

  def sample(self, key: jax.Array, n: int, *, resample: bool = True, pool: int = 4) -> jax.Array:
    """``n`` samples of the target (as far as the fit allows): ``(n, dim)`` float or
    ``(n, num_sites)`` int32.

    By default (``resample=True``) this is sampling-importance-resampling: ``pool · n`` model
    samples are drawn with their path weights and ``n`` of them are drawn with replacement in
    proportion to ``exp(log_w)``, which corrects the model's bias towards the target (the raw model
    puts mass between modes that the weights remove). Its accuracy is set by the effective sample
    size of the pool, about ``pool · n · ess`` (``self.ess``, measured at fit time): with a low ESS
    many of the ``n`` samples repeat. ``resample=False`` returns the raw model samples (the SDE /
    CTMC rollout, biased by what the fit did not learn); ``sample_weighted`` returns them with
    their log weights.

    Args:
      key: PRNG key.
      n: number of samples.
      resample: resample by the importance weights (default) or return the raw model samples.
      pool: model samples drawn per returned sample when resampling (>= 1).
    """
    n = _positive_int(n, "n", "sample")
    if not resample:
      return self.sample_weighted(key, n)[0]
    pool = _positive_int(pool, "pool", "sample")
    k_pool, k_pick = jax.random.split(key)
    # The pool is drawn n at a time: a rollout's memory is that of n paths, whatever pool is.
    parts = [self.sample_weighted(k, n) for k in jax.random.split(k_pool, pool)]
    x = jnp.concatenate([p[0] for p in parts])
    log_w = jnp.concatenate([p[1] for p in parts]).astype(jnp.float32)
    log_w = jnp.where(jnp.isnan(log_w), -jnp.inf, log_w)
    # Multinomial resampling by inverting the weights' CDF: O(pool · n) memory (categorical with
    # shape=(n,) would broadcast the pool's logits to (n, pool · n)).
    cdf = jnp.cumsum(jax.nn.softmax(log_w))
    u = jax.random.uniform(k_pick, (n,), maxval=cdf[-1])
    idx = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), cdf.shape[0] - 1)
    return x[idx]


def _fit(sampler, opts: dict, cfg: proximal.ProxConfig, key, shape, fn: str) -> FittedSampler:
  callbacks = []
  if opts["progress"]:
    callbacks.append(_stage_printer(proximal.total_stages(cfg)))
  if opts["callback"] is not None:
    callbacks.append(opts["callback"])
  callback = (lambda rec: [c(rec) for c in callbacks]) if callbacks else None
  k_fit, k_eval = jax.random.split(key)
  res = sampler.fit(cfg, k_fit, callback)
  n_eval = _positive_int(opts["eval_samples"], "eval_samples", fn)
  if n_eval < 2:
    raise ValueError(f"{fn}: eval_samples must be >= 2; got {n_eval}")
  out = FittedSampler(
    sampler=sampler,
    params=res.params,
    log_z=float("nan"),
    ess=float("nan"),
    elbo=float("nan"),
    history=res.history,
    shape=shape,
  )
  x_eval, log_w = out.sample_weighted(k_eval, n_eval)
  lw = np.asarray(log_w, np.float64)
  bad = np.isnan(lw) | (lw == np.inf)  # -inf is a zero density (weight 0): allowed
  xs = np.asarray(x_eval, np.float64).reshape(n_eval, -1)
  if not np.isfinite(xs).all():
    raise FloatingPointError(
      f"{fn}: the fitted sampler produced non-finite samples ({int((~np.isfinite(xs)).any(1).sum())} "
      f"of {n_eval}): the training diverged (lower step_size, or check the log density)"
    )
  if bad.any():
    i = int(np.argmax(bad))
    what = "NaN" if np.isnan(lw[i]) else "+inf"
    raise ValueError(
      f"{fn}: the log density is NaN or +inf at {int(bad.sum())} of {n_eval} evaluation samples "
      f"({what} at sample {i}, x = {np.asarray(x_eval[i]).ravel()[:6].tolist()}); it must be finite "
      "or -inf (zero density) everywhere the sampler can reach"
    )
  if not np.isfinite(lw).any():
    raise ValueError(
      f"{fn}: the log density is -inf at all {n_eval} evaluation samples: the sampler found no "
      "region of positive density"
    )
  stats = jax.device_get(metrics.weight_stats(log_w.astype(jnp.float32)))
  # (the ELBO, a mean of log weights, is -inf when the sampler reaches a zero-density region)
  if not all(np.isfinite(float(stats[k])) for k in ("eval/log_z", "eval/ess")):
    raise FloatingPointError(
      f"{fn}: the fit's estimates are not finite (log Z {float(stats['eval/log_z'])}, ESS "
      f"{float(stats['eval/ess'])}); the training diverged"
    )
  out.log_z = float(stats["eval/log_z"])
  out.ess = float(stats["eval/ess"])
  out.elbo = float(stats["eval/elbo"])
  return out


def fit_sampler(
  log_density: Callable[[jax.Array], jax.Array], dim: int, *, key: jax.Array, **options
) -> FittedSampler:
  """Trains a continuous PDNS sampler for ``exp(log_density)`` on R^dim.

  The sampler is a controlled SDE started from the stationary OU reference N(0, sigma_bar^2 I);
  each proximal stage re-weights paths of the previous model (trust region KL = eps, Eq. 10 of
  the paper) and fits the control by weighted bridge matching; the last stages run at
  eta = infinity. Defaults: ``CONTINUOUS_DEFAULTS`` (the project's recommended settings).

  Args:
    log_density: unnormalised log density of one point, ``(dim,) -> ()`` (float); it is
      ``jax.vmap``-ped and traced, so it must be a JAX function.
    dim: d >= 1.
    key: PRNG key (training and the final evaluation rollout).
    **options: any key of ``CONTINUOUS_DEFAULTS``: the reference (``sigma_bar``, ``alpha_max``,
      ``alpha_min``, ``schedule``), ``num_steps`` (Euler-Maruyama), the network (``hidden``,
      ``depth``, ``param``, ``loss``, ``t_max``), the stage loop (``proximal.ProxConfig``'s
      fields: ``num_stages``, ``refine_stages``, ``epochs_per_stage``, ``buffer_size``,
      ``batch_size``, ``epsilon``, ``step_size``, ``eta_inf`` (the non-proximal baseline), ...),
      ``eval_samples``, ``progress`` (a line per stage) and ``callback`` (called with each
      stage's dict).

  Returns:
    ``FittedSampler``: ``.sample(key, n) -> (n, dim)``, ``.sample_weighted(key, n)``,
    ``.log_z``, ``.ess``, ``.elbo``, ``.history``.

  Raises:
    ValueError: an unknown option (named, with the closest valid one), a bad value, a
      ``log_density`` that does not map a ``(dim,)`` point to a float scalar, or one that is NaN
      or +inf where the sampler reaches (-inf, a zero density, is allowed).
    FloatingPointError: the fitted estimates (log Z, ESS) are not finite.

  Examples:
    >>> import jax, jax.numpy as jnp
    >>> from iclr26_jax import pdns
    >>> log_density = lambda x: -0.5 * jnp.sum((x - 1.0) ** 2)  # Z = 2 pi (log Z = 1.838)
    >>> fitted = pdns.fit_sampler(log_density, 2, key=jax.random.key(0), num_stages=2,
    ...     refine_stages=1, epochs_per_stage=1, buffer_size=256, batch_size=128, hidden=16,
    ...     num_steps=20, eval_samples=512)
    >>> fitted.sample(jax.random.key(1), 5).shape
    (5, 2)
    >>> bool(abs(fitted.log_z - jnp.log(2 * jnp.pi)) < 0.5), 0.0 < fitted.ess <= 1.0
    (True, True)
  """
  fn = "fit_sampler"
  dim = _positive_int(dim, "dim", fn)
  key = _check_key(key, fn)
  if not callable(log_density):
    raise ValueError(f"{fn}: log_density must be callable; got {type(log_density).__name__}")
  opts = _options(CONTINUOUS_DEFAULTS, options, fn)
  _check_scalar_fn(fn, "log_density", log_density, jax.ShapeDtypeStruct((dim,), jnp.float32))
  cfg = _prox(opts, fn)
  try:
    ref = references.ou_reference(
      dim,
      schedule=opts["schedule"],
      sigma_bar=float(opts["sigma_bar"]),
      alpha_min=float(opts["alpha_min"]),
      alpha_max=float(opts["alpha_max"]),
    )
    sampler = continuous.ContinuousSampler(
      ref,
      jax.vmap(log_density),
      num_steps=int(opts["num_steps"]),
      param=opts["param"],
      loss=opts["loss"],
      t_max=float(opts["t_max"]),
      hidden=_positive_int(opts["hidden"], "hidden", fn),
      depth=_positive_int(opts["depth"], "depth", fn),
    )
  except ValueError as e:
    raise ValueError(f"{fn}: {e}") from None
  return _fit(sampler, opts, cfg, key, (dim,), fn)


def fit_discrete_sampler(
  log_prob: Callable[[jax.Array], jax.Array],
  num_sites: int,
  num_states: int,
  *,
  key: jax.Array,
  **options,
) -> FittedSampler:
  """Trains a discrete (masked-diffusion) PDNS sampler for ``exp(log_prob)`` on
  {0..num_states-1}^num_sites.

  The model unmasks the sites in a uniformly random order, drawing each token from a denoiser
  MLP; the reference draws tokens uniformly, so ``.log_z`` estimates log sum_x exp(log_prob(x))
  (absolute, not relative to the uniform law). Defaults: ``DISCRETE_DEFAULTS``.

  Args:
    log_prob: unnormalised log probability of one state, ``(num_sites,) int32 -> ()`` (float),
      a JAX function (``jax.vmap``-ped).
    num_sites: D >= 1.
    num_states: q >= 2 token values per site.
    key: PRNG key.
    **options: any key of ``DISCRETE_DEFAULTS``: the denoiser (``hidden``, ``depth``), the WDCE
      (``formulation`` "lambda" | "m", ``replicates``, ``antithetic``), the stage loop
      (``proximal.ProxConfig``'s fields), ``eval_samples``, ``progress``, ``callback``.

  Returns:
    ``FittedSampler``: ``.sample(key, n) -> (n, num_sites) int32``, ``.log_z``, ``.ess``, ...

  Raises:
    ValueError: an unknown option (named, with the closest valid one), a bad value, or a
      ``log_prob`` that does not map a ``(num_sites,)`` int32 state to a float scalar.

  Examples:
    >>> import jax, jax.numpy as jnp
    >>> from iclr26_jax import pdns
    >>> log_prob = lambda x: 0.5 * jnp.sum(x == 1).astype(jnp.float32)  # 3 sites, 2 states
    >>> fitted = pdns.fit_discrete_sampler(log_prob, 3, 2, key=jax.random.key(0),
    ...     num_stages=2, refine_stages=1, epochs_per_stage=1, buffer_size=256,
    ...     batch_size=128, hidden=16, eval_samples=512)
    >>> x = fitted.sample(jax.random.key(1), 4)
    >>> x.shape, bool(jnp.all((x >= 0) & (x < 2)))
    ((4, 3), True)
    >>> exact = 3 * jnp.log(1 + jnp.exp(0.5))  # sum over the 8 states
    >>> bool(abs(fitted.log_z - exact) < 0.1)
    True
  """
  fn = "fit_discrete_sampler"
  num_sites = _positive_int(num_sites, "num_sites", fn)
  num_states = _positive_int(num_states, "num_states", fn)
  if num_states < 2:
    raise ValueError(f"{fn}: num_states must be >= 2; got {num_states}")
  key = _check_key(key, fn)
  if not callable(log_prob):
    raise ValueError(f"{fn}: log_prob must be callable; got {type(log_prob).__name__}")
  opts = _options(DISCRETE_DEFAULTS, options, fn)
  _check_scalar_fn(fn, "log_prob", log_prob, jax.ShapeDtypeStruct((num_sites,), jnp.int32))
  cfg = _prox(opts, fn)
  try:
    sampler = discrete.DiscreteSampler(
      jax.vmap(log_prob),
      num_sites,
      num_states,
      formulation=opts["formulation"],
      replicates=_positive_int(opts["replicates"], "replicates", fn),
      antithetic=bool(opts["antithetic"]),
      hidden=_positive_int(opts["hidden"], "hidden", fn),
      depth=_positive_int(opts["depth"], "depth", fn),
    )
  except ValueError as e:
    raise ValueError(f"{fn}: {e}") from None
  return _fit(sampler, opts, cfg, key, (num_sites,), fn)

"""No config field that the code ignores.

Every shipped config (``experiments/configs/**``, default and ``:smoke``) is built as
``experiments.main`` builds it, under ``config_reads.recording``: the config checks, the method's
construction, the trainer's mesh and shardings, and ``jax.eval_shape`` of ``init_state`` and of
one update (traced, never compiled). A field counts as used when some config of its method
package reads it (fields read only for some values of other fields, e.g. ``optim.momentum`` for SGD or
``data.path`` for the UCI task, are used when one shipped config reaches them). A field no config
of its method package reads fails the test, unless ``ALLOWED`` names it with the phase that reads it (a phase
the trace does not reach: the training loop, evaluation, the online phase); an allowlisted field
that no config has any more fails too.
"""

import glob
import importlib.util
import os

import jax
import pytest

from experiments import registry
from iclr26_jax.core import config as config_lib
from iclr26_jax.core import sharding as shd
from iclr26_jax.core import trainer
from tests.conftest import REPO
from tests.harness.config_reads import recording

CONFIGS = sorted(
  p
  for p in glob.glob(os.path.join(REPO, "experiments/configs/**/*.py"), recursive=True)
  if not p.endswith("__init__.py")
)

_LOOP = "read by core.trainer's loop (logging, evaluation, checkpoint, bar), not traced here"
# (method package, dotted key) -> where it is read. "*" = every method package.
ALLOWED = {
  ("*", "log_every"): _LOOP,
  ("*", "eval_every"): _LOOP,
  ("*", "checkpoint_every"): _LOOP,
  ("*", "keep_checkpoints"): _LOOP,
  ("*", "progress_bar"): _LOOP,
  (
    "pdns",
    "num_steps",
  ): "PDNS derives it from prox.* (a field reference); the trainer's loop reads it",
}
_OPTIM = "core.optim.make_optimizer reads it only for the optimiser or schedule that uses it"
for _method_name, _keys in {
  "anybcq": ("momentum",),
  "lmkan": ("decay_steps", "end_lr_factor", "momentum", "warmup_steps", "weight_decay"),
  "minpv": ("momentum", "warmup_steps"),
  "qam": ("end_lr_factor", "momentum", "warmup_steps", "weight_decay"),
  "toy": ("momentum", "warmup_steps", "weight_decay"),
}.items():
  ALLOWED.update({(_method_name, f"optim.{k}"): _OPTIM for k in _keys})
_EVAL = "read by the method's evaluate (the trace stops at one update)"
ALLOWED.update(
  {
    ("lmkan", "lmkan.test_size"): _EVAL,
    ("pdns", "eval.reference.dist_bins"): _EVAL,
    ("qam", "eval.episodes"): _EVAL,
    ("qam", "eval.horizon"): _EVAL + " (OGBench)",
    ("qam", "eval.seed"): _EVAL,
    (
      "qam",
      "online.episode_length",
    ): "read by the online phase (no shipped variant traced has one)",
    **{
      (("minpv", f"estimate.{k}")): _EVAL + " (the density-ratio estimator)"
      for k in ("atol", "gap_factor", "max_steps", "nodes", "rtol", "t_start")
    },
    ("minpv", "data.gamma_shape"): "read by the gamma_exponential_mi task (no shipped config)",
    ("minpv", "data.noise_eps"): "read by the additive_noise_mi task (no shipped config)",
    ("minpv", "data.path"): "read by the uci task (needs a local file; no shipped config)",
    (
      "minpv",
      "loss.is_refresh",
    ): "read by the 'is' time sampler with a trainable path (no shipped config)",
    ("minpv", "path.presolve_lr"): "read by path.training='presolve_freeze' (no shipped config)",
    ("minpv", "path.presolve_steps"): "read by path.training='presolve_freeze' (no shipped config)",
    (
      "toy",
      "toy.signal_process",
    ): "fault injection: read by get_batch once toy.signal_at_step >= 0",
    ("toy", "toy.step_delay"): "fault injection: read by get_batch once toy.signal_at_step >= 0",
  }
)


def _method_of(path: str) -> str:
  return os.path.relpath(path, os.path.join(REPO, "experiments/configs")).split(os.sep)[0]


def _load(path, arg):
  spec = importlib.util.spec_from_file_location("cfg_under_test", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def _reads(cfg) -> set[str]:
  """The dotted keys of ``cfg`` read while it becomes a method with a traced update."""
  with recording(cfg) as rec:
    registry.validate(cfg)
    trainer._validate(cfg)
    method = registry.get_method(cfg.method)(cfg)
    mesh = shd.make_mesh(dict(cfg.mesh))
    state = jax.eval_shape(method.init_state, jax.random.PRNGKey(int(cfg.seed)))
    shd.state_shardings(state, mesh, cfg.param_sharding)
    data = method.device_data()
    if data is not None:
      jax.eval_shape(lambda s, d: method.update(s, method.device_batch(d, s.step)), state, data)
    else:
      jax.eval_shape(method.update, state, method.get_batch(0))
  return rec.finish()


@pytest.fixture
def cheap_data(monkeypatch):
  """Keeps the walk at seconds: the data generators are called with the config's values (read
  as usual), but produce little. PDNS particle targets draw MCMC reference samples when built
  (used by evaluation only); QAM generates point-maze play data (4 episodes here) or loads
  OGBench files (the point-maze data stands in: the trace needs shapes only)."""
  from iclr26_jax.pdns import mcmc
  from iclr26_jax.qam import datasets

  monkeypatch.setattr(mcmc, "reference_samples", lambda *a, **k: None)
  real = datasets.generate_pointmaze
  small = real(0, 4, 50)
  monkeypatch.setattr(datasets, "generate_pointmaze", lambda seed, n, length, **kw: small)
  try:
    from iclr26_jax.qam.envs import ogbench_env, ogbench_generate
  except ImportError:  # the optional [rl] extra: its configs fail to build below
    return
  monkeypatch.setattr(ogbench_generate, "generate_to_dir", lambda *a, **k: None)
  # No cached dataset counts: the generation branch (and the fields it reads) is always taken,
  # whatever files earlier runs left in the configs' dataset_dir (the walk was machine-dependent).
  monkeypatch.setattr(
    ogbench_generate, "dataset_paths", lambda *a, **k: ["/nonexistent/iclr26_walk.npz"]
  )
  monkeypatch.setattr(ogbench_env, "load", lambda *a, **k: (None, small[0], None))


def test_no_shipped_config_has_a_field_no_code_reads(cheap_data):
  fields: dict[str, set[str]] = {}
  read: dict[str, set[str]] = {}
  for path in CONFIGS:
    name = _method_of(path)
    for arg in ("smoke", None):
      cfg = _load(path, arg)
      fields.setdefault(name, set()).update(config_lib.flat_fields(cfg))
      read.setdefault(name, set()).update(_reads(cfg))
  unused = sorted(
    f"{name}: {key}"
    for name in fields
    for key in fields[name] - read[name]
    if (name, key) not in ALLOWED and ("*", key) not in ALLOWED
  )
  assert not unused, "config fields no code reads (remove them, or wire them):\n" + "\n".join(
    unused
  )
  stale = sorted(
    f"{name}: {key}"
    for name, key in ALLOWED
    if not any(key in fields[r] for r in (fields if name == "*" else [name]))
  )
  assert not stale, f"ALLOWED names fields no shipped config has: {stale}"

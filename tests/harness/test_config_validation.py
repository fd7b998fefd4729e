"""Configs are validated before a run starts: a bad size, count or rate, or a NaN / inf
in a float field, stops ``experiments.main`` with one line naming the full dotted key, exit
status 2, nothing written."""

import glob
import importlib.util
import os
import subprocess
import sys

import ml_collections
import pytest

from experiments import registry
from iclr26_jax.core import config as config_lib
from tests.conftest import REPO, subprocess_env

CONFIGS = sorted(
  p
  for p in glob.glob(os.path.join(REPO, "experiments/configs/**/*.py"), recursive=True)
  if not p.endswith("__init__.py")
)
TOY = "experiments/configs/toy/regression.py"


def _load(path, arg):
  spec = importlib.util.spec_from_file_location("cfg_under_test", os.path.join(REPO, path))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def test_check_range_names_the_key_and_checks_items():
  c = ml_collections.ConfigDict({"a": {"n": 3, "widths": (4, 4), "p": 0.5, "flag": True}})
  config_lib.positive(c, "a.n", "a.widths")
  config_lib.fraction(c, "a.p")
  config_lib.positive(c, "a.missing", optional=True)
  c.a.n = 0
  with pytest.raises(config_lib.ConfigError, match=r"^config key 'a.n' must be >= 1; got 0$"):
    config_lib.positive(c, "a.n")
  c.a.widths = (4, -4)
  with pytest.raises(
    config_lib.ConfigError, match=r"'a.widths' must hold numbers >= 1; got \(4, -4\)"
  ):
    config_lib.positive(c, "a.widths")
  with pytest.raises(config_lib.ConfigError, match=r"'a.p' must be in \(0.5, 1\]; got 0.5"):
    config_lib.check_range(c, "a.p", gt=0.5, le=1)
  with pytest.raises(config_lib.ConfigError, match="'a.flag' must be >= 0"):
    config_lib.nonneg(c, "a.flag")  # a bool is not a number here
  with pytest.raises(config_lib.ConfigError, match="missing required key 'a.missing'"):
    config_lib.positive(c, "a.missing")


def test_every_shipped_config_passes_validation():
  for path in CONFIGS:
    for arg in (None, "smoke"):
      registry.validate(_load(path, arg))


@pytest.mark.parametrize(
  "path,arg,message",
  [
    (TOY, "toy.dim=-3", "config key 'toy.dim' must be >= 1; got -3"),
    (TOY, "toy.num_examples=0", "config key 'toy.num_examples' must be >= 1; got 0"),
    (TOY, "toy.hidden=(-4,)", "config key 'toy.hidden' must hold numbers >= 1; got (-4,)"),
    (TOY, "optim.learning_rate=-0.1", "config key 'optim.learning_rate' must be >= 0; got -0.1"),
    (TOY, "batch_size=0", "config key 'batch_size' must be >= 1; got 0"),
    (
      "experiments/configs/qam/pointmaze_qam.py",
      "agent.critic_hidden_dims=(-4,4)",
      "config key 'agent.critic_hidden_dims' must hold numbers >= 1; got (-4, 4)",
    ),
    ("experiments/configs/qam/pointmaze_qam.py", "agent.num_qs=0", "'agent.num_qs' must be >= 1"),
    ("experiments/configs/pdns/gmm2d.py", "sampler.hidden=0", "'sampler.hidden' must be >= 1"),
    ("experiments/configs/minpv/gaussian_mi.py", "model.width=-1", "'model.width' must be >= 1"),
    ("experiments/configs/lmkan/teacher.py", "lmkan.hidden=(8,0)", "'lmkan.hidden' must hold"),
    ("experiments/configs/dsb/csbm.py", "hparams.hidden=0", "'hparams.hidden' must be >= 1"),
    ("experiments/configs/anybcq/lm.py", "lm.width=0", "'lm.width'"),
  ],
)
def test_method_values_out_of_range_name_the_dotted_key(path, arg, message):
  cfg = _load(path, "smoke")
  config_lib.apply_overrides(cfg, config_lib.parse_arg(arg)[1])
  with pytest.raises(config_lib.ConfigError) as e:
    registry.validate(cfg)
  assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: os.path.relpath(p, REPO))
def test_nan_or_inf_in_any_float_field_fails_validation(path):
  # Every float field of the shipped config (and float items of tuples), each set to NaN, +inf
  # and -inf in turn: validation names exactly that key (a NaN MI target used to be replaced
  # silently by the default rule, and an infinite learning rate passed).
  base = _load(path, "smoke")
  fields = {
    k: v
    for k, v in config_lib.flat_fields(base).items()
    if isinstance(v, float) or (isinstance(v, tuple) and any(isinstance(x, float) for x in v))
  }
  assert fields or "toy" in path, path  # every method package but the toy one has a float field
  for key, value in fields.items():
    for bad in (float("nan"), float("inf"), -float("inf")):
      cfg = _load(path, "smoke")
      new = bad if isinstance(value, float) else tuple(bad for _ in value)
      config_lib.apply_overrides(cfg, {key: new})
      with pytest.raises(config_lib.ConfigError) as e:
        registry.validate(cfg)
      assert str(e.value).startswith(f"config key '{key}' must be a finite number"), (key, e.value)
  cfg = _load(path, "smoke")
  if fields:
    key = next(iter(fields))
    if isinstance(fields[key], float):
      with pytest.raises(config_lib.ConfigError, match=f"'{key}' must be a finite number"):
        config_lib.apply_overrides(cfg, {key: "nan"})  # the :key=value text, at parse time


def _main(tmp_path, *args):
  return subprocess.run(
    [sys.executable, "-m", "experiments.main", *args],
    capture_output=True,
    text=True,
    cwd=REPO,
    env=subprocess_env(),
    timeout=120,
  )


@pytest.mark.parametrize(
  "args,expected",
  [
    ((f"--config={TOY}:smoke", "--config.toy.dim=-3"), "config key 'toy.dim' must be >= 1; got -3"),
    ((f"--config={TOY}:smoke,toy.num_examples=0",), "'toy.num_examples' must be >= 1; got 0"),
    ((f"--config={TOY}:smoke", "--config.toy.nosuch=1"), "unknown config key 'toy.nosuch'"),
    (("--config={bad}",), "cannot load config file {bad}:2: invalid syntax"),
    # NaN / inf in a float field: the right key and value, before the run starts.
    (
      (f"--config={TOY}:smoke", "--config.optim.learning_rate=inf"),
      "config key 'optim.learning_rate' must be a finite number; got inf",
    ),
    (
      ("--config=experiments/configs/minpv/gaussian_mi.py:smoke,data.mi=inf",),
      "config key 'data.mi' must be a finite number; got 'inf'",
    ),
  ],
)
def test_main_stops_on_an_invalid_config_in_one_line(tmp_path, args, expected):
  bad = tmp_path / "bad_config.py"
  bad.write_text("def get_config(arg=None):\n  x = = 1\n")
  workdir = tmp_path / "w"
  out = _main(tmp_path, *(a.format(bad=bad) for a in args), f"--workdir={workdir}")
  assert out.returncode == 2, out.stderr[-2000:]
  lines = [l for l in out.stderr.splitlines() if l.strip() and l != "(see --help)"]
  assert lines == [f"config error: {expected.format(bad=bad)}"] or (
    len(lines) == 1 and expected.format(bad=bad) in lines[0]
  ), out.stderr
  assert not workdir.exists()  # nothing written


def test_main_names_a_workdir_it_cannot_create(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  out = _main(tmp_path, f"--config={TOY}:smoke", f"--workdir={blocker / 'w'}")
  assert out.returncode == 2
  assert out.stderr.strip().splitlines() == [
    f"error: workdir '{blocker / 'w'}' cannot be created: '{blocker}' is not a directory"
  ]

import subprocess

import ml_collections
import pytest

from iclr26_jax.core import config as config_lib
from tests.conftest import subprocess_env


def _cfg():
  c = ml_collections.ConfigDict()
  c.lr = 0.1
  c.steps = 10
  c.flag = False
  c.name = "adam"
  c.widths = (1, 2)
  c.sub = ml_collections.ConfigDict({"depth": 2})
  return c


def test_parse_arg():
  assert config_lib.parse_arg("smoke,seed=3, sub.depth=4") == (
    {"smoke"},
    {"seed": "3", "sub.depth": "4"},
  )
  assert config_lib.parse_arg(None) == (set(), {})


def test_overrides_coerce_types_and_lock():
  c = config_lib.experiment(_cfg(), "lr=0.5,steps=7,flag=true,name=sgd,widths=(3,4),sub.depth=5")
  assert (c.lr, c.steps, c.flag, c.name, c.widths, c.sub.depth) == (0.5, 7, True, "sgd", (3, 4), 5)
  with pytest.raises(AttributeError):
    c.new_field = 1  # locked


@pytest.mark.parametrize(
  "arg,key",
  [
    ("lr=abc", "lr"),
    ("nonexistent=1", "nonexistent"),
    ("sub.dpth=1", "sub.dpth"),
    ("steps=1.5", "steps"),
    ("flag=maybe", "flag"),
  ],
)
def test_bad_override_names_key(arg, key):
  with pytest.raises(config_lib.ConfigError, match=f"'{key}'"):
    config_lib.experiment(_cfg(), arg)


def test_unknown_variant():
  with pytest.raises(config_lib.ConfigError, match="bogus"):
    config_lib.experiment(_cfg(), "bogus", {"smoke": {}})


def test_dump_roundtrip(tmp_path):
  import json

  path = config_lib.dump(config_lib.trainer_defaults(), str(tmp_path))
  assert json.load(open(path))["mesh"] == {"data": -1}


@pytest.mark.parametrize(
  "override,key",
  [
    ("--config.optim.learning_rate=abc", "learning_rate"),
    ("--config.nonexistent=1", "nonexistent"),
    ("--config.toy.dimm=3", "dimm"),
  ],
)
def test_main_rejects_bad_flags_before_compute(tmp_path, python, repo_root, override, key):
  workdir = tmp_path / "w"
  proc = subprocess.run(
    [
      python,
      "-m",
      "experiments.main",
      f"--config={repo_root}/experiments/configs/toy/regression.py:smoke",
      f"--workdir={workdir}",
      override,
    ],
    capture_output=True,
    text=True,
    env=subprocess_env(),
    cwd=repo_root,
    timeout=120,
  )
  assert proc.returncode != 0
  assert key in proc.stderr
  assert "Traceback" not in proc.stderr
  assert not workdir.exists()  # nothing ran


def _variants(log):
  """Three variants that record their order; ``double`` reads what ``wide`` set."""

  def wide(c):
    log.append("wide")
    c.widths = (8, 8)

  def double(c):
    log.append("double")
    c.steps = 2 * c.steps
    c.widths = tuple(2 * w for w in c.widths)

  return {"smoke": {**config_lib.SMOKE_TRAINER, "lr": 0.5}, "wide": wide, "double": double}


def _trainer_cfg():
  c = _cfg()
  c.num_steps, c.log_every, c.checkpoint_every = 1000, 100, 1000
  return c


@pytest.mark.parametrize("arg", ["double,wide", "wide,double"])
def test_experiment_applies_variants_in_dict_order(arg):
  log = []
  c = config_lib.experiment(_trainer_cfg(), arg, _variants(log))
  assert log == ["wide", "double"]  # the dict's order, whatever the arg's
  assert (c.widths, c.steps) == ((16, 16), 20)  # double saw wide's widths
  with pytest.raises(AttributeError):
    c.new_field = 1  # locked


def test_experiment_dict_variant_then_overrides():
  c = config_lib.experiment(_trainer_cfg(), "smoke,lr=0.25,num_steps=3", _variants([]))
  # the dict variant set num_steps=20, lr=0.5; the key=value overrides come after and win
  assert (c.num_steps, c.log_every, c.checkpoint_every, c.lr) == (3, 5, 10, 0.25)
  c = config_lib.experiment(_trainer_cfg(), None, _variants([]))
  assert (c.num_steps, c.lr, c.widths) == (1000, 0.1, (1, 2))  # no words: nothing applied


def test_experiment_unknown_word_and_one_of():
  log = []
  with pytest.raises(config_lib.ConfigError, match=r"unknown config variant\(s\) \['wdie'\]"):
    config_lib.experiment(_trainer_cfg(), "wide,wdie", _variants(log))
  assert log == []  # checked before any variant runs
  with pytest.raises(config_lib.ConfigError, match=r"several presets \['double', 'wide'\]"):
    config_lib.experiment(
      _trainer_cfg(), "wide,double", _variants(log), one_of={"presets": ("wide", "double")}
    )
  with pytest.raises(config_lib.ConfigError, match="'lr'"):
    config_lib.experiment(_trainer_cfg(), "smoke,lr=abc", _variants(log))


def test_experiment_validate_sees_locked_config():
  seen = []

  def validate(c):
    seen.append((c.is_locked, c.steps))
    if c.steps < 0:
      raise config_lib.ConfigError("config key 'steps' must be >= 0")

  config_lib.experiment(_cfg(), "steps=4", {}, validate=validate)
  assert seen == [(True, 4)]
  with pytest.raises(config_lib.ConfigError, match="'steps'"):
    config_lib.experiment(_cfg(), "steps=-1", {}, validate=validate)


def test_experiment_words_are_listed_for_show_variants():
  with config_lib.recording_variants() as known:
    config_lib.experiment(_trainer_cfg(), None, _variants([]))
  assert known == {"smoke", "wide", "double"}


# -- the bridge between run configs and library dataclasses --------------------------------------


def test_to_dataclass_and_back_name_the_config_key():
  import dataclasses

  @dataclasses.dataclass(frozen=True)
  class Solver:
    widths: tuple = (8,)
    lr: float = 1e-3
    batch_size: int = 4

    def __post_init__(self):
      if self.lr <= 0:
        raise ValueError(f"lr must be > 0; got {self.lr}")
      if self.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {self.batch_size}")

  section = ml_collections.ConfigDict({"widths": [4, 4], "lr": 0.1})
  got = config_lib.to_dataclass(Solver, section, "model", batch_size=2)
  assert got == Solver(widths=(4, 4), lr=0.1, batch_size=2)  # lists become tuples
  back = config_lib.from_dataclass(got, ["widths", "lr"])
  assert back.to_dict() == {"widths": [4, 4], "lr": 0.1}
  assert config_lib.to_dataclass(Solver, back, "model", batch_size=2) == got
  with pytest.raises(config_lib.ConfigError, match=r"'model.lr': lr must be > 0; got -1"):
    config_lib.to_dataclass(Solver, {"lr": -1.0}, "model")
  # A field given from elsewhere in the config is named by its own key.
  with pytest.raises(config_lib.ConfigError, match=r"config key 'batch_size': batch_size must"):
    config_lib.to_dataclass(Solver, {}, "model", keys={"batch_size": "batch_size"}, batch_size=0)
  with pytest.raises(config_lib.ConfigError, match=r"\['model.depth'\].*\['lr', 'widths'\]"):
    config_lib.to_dataclass(Solver, {"depth": 2}, "model", batch_size=2)

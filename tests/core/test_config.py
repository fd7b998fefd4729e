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
      {"smoke"}, {"seed": "3", "sub.depth": "4"})
  assert config_lib.parse_arg(None) == (set(), {})


def test_overrides_coerce_types_and_lock():
  c = config_lib.finalize(_cfg(), "lr=0.5,steps=7,flag=true,name=sgd,widths=(3,4),sub.depth=5")
  assert (c.lr, c.steps, c.flag, c.name, c.widths, c.sub.depth) == (
      0.5, 7, True, "sgd", (3, 4), 5)
  with pytest.raises(AttributeError):
    c.new_field = 1  # locked


@pytest.mark.parametrize("arg,key", [("lr=abc", "lr"), ("nonexistent=1", "nonexistent"),
                                     ("sub.dpth=1", "sub.dpth"), ("steps=1.5", "steps"),
                                     ("flag=maybe", "flag")])
def test_bad_override_names_key(arg, key):
  with pytest.raises(config_lib.ConfigError, match=f"'{key}'"):
    config_lib.finalize(_cfg(), arg)


def test_unknown_variant():
  with pytest.raises(config_lib.ConfigError, match="bogus"):
    config_lib.finalize(_cfg(), "bogus")


def test_dump_roundtrip(tmp_path):
  import json
  path = config_lib.dump(config_lib.trainer_defaults(), str(tmp_path))
  assert json.load(open(path))["mesh"] == {"data": -1}


@pytest.mark.parametrize("override,key", [("--config.optim.learning_rate=abc", "learning_rate"),
                                          ("--config.nonexistent=1", "nonexistent"),
                                          ("--config.toy.dimm=3", "dimm")])
def test_main_rejects_bad_flags_before_compute(tmp_path, python, repo_root, override, key):
  workdir = tmp_path / "w"
  proc = subprocess.run(
      [python, "-m", "experiments.main",
       f"--config={repo_root}/experiments/configs/toy/regression.py:smoke",
       f"--workdir={workdir}", override],
      capture_output=True, text=True, env=subprocess_env(), cwd=repo_root, timeout=120)
  assert proc.returncode != 0
  assert key in proc.stderr
  assert "Traceback" not in proc.stderr
  assert not workdir.exists()  # nothing ran

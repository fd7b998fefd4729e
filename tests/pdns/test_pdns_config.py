"""The PDNS run config: ``config.optim`` is the stage optimiser (mapped onto ``ProxConfig`` in
one place, ``pdns.method.prox_config``); the old ``prox.*`` optimiser keys stop with an error
naming the new key; the schedule-derived trainer fields (``num_steps``, ``checkpoint_every``,
``eval_every``, ``log_every``) follow ``prox.*`` and ``batch_size`` also when absl applies
``--config.*`` flags after ``get_config``.

Oracles: the stage arithmetic written out here (num_steps = (num_stages + refine_stages) x
epochs_per_stage x (buffer_size // batch_size), with the numbers of the ``laptop`` Ising
config), ``proximal.steps_per_stage`` / ``total_stages`` of the ``ProxConfig`` the method builds,
the same override given after the colon (applied before the config is built), the configs'
documented optimiser settings, and the first Adam step of the built optax chain (-lr sign(g)).
No training, no compile.
"""

import importlib.util
import os

import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as core_optim
from iclr26_jax.pdns import method, proximal
from tests.conftest import REPO, config_from_flags

ISING = "experiments/configs/pdns/ising.py"
DERIVED = ("num_steps", "checkpoint_every", "eval_every", "log_every")
OLD_KEYS = {
  "prox.learning_rate": "optim.learning_rate",
  "prox.b1": "optim.b1",
  "prox.b2": "optim.b2",
  "prox.grad_clip": "optim.grad_clip",
}


def _get_config(name, arg):
  path = os.path.join(REPO, "experiments", "configs", "pdns", f"{name}.py")
  spec = importlib.util.spec_from_file_location(f"pdns_cfg_{name}", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(arg)


def _stage_steps(c):
  p = method.prox_config(c)
  return proximal.steps_per_stage(p), proximal.total_stages(p)


@pytest.mark.parametrize(
  "overrides,stages,epochs,buffer,batch",
  [
    ((), 40, 4, 2048, 256),  # laptop: 40 + 3 stages of 32
    (("prox.num_stages=5",), 5, 4, 2048, 256),
    (("prox.refine_stages=0", "prox.epochs_per_stage=2"), 40, 2, 2048, 256),
    (("prox.buffer_size=4096", "batch_size=128"), 40, 4, 4096, 128),
  ],
)
def test_derived_trainer_fields_follow_prox_flags(overrides, stages, epochs, buffer, batch):
  refine = 0 if "prox.refine_stages=0" in overrides else 3
  sps = epochs * (buffer // batch)
  want = {
    "num_steps": (stages + refine) * sps,
    "checkpoint_every": sps,
    "eval_every": sps,
    "log_every": min(50, sps),
  }
  flagged = config_from_flags(f"{ISING}:laptop", *(f"--config.{o}" for o in overrides))
  assert {k: flagged[k] for k in DERIVED} == want
  # The method's own stage arithmetic on the ProxConfig it builds agrees.
  s, total = _stage_steps(flagged)
  assert (s, total * s) == (sps, want["num_steps"])
  # ... and so does the same override after the colon: one config either way.
  from_arg = config_from_flags(f"{ISING}:laptop" + "".join(f",{o}" for o in overrides))
  assert config_lib.flat_fields(from_arg) == config_lib.flat_fields(flagged)


def test_a_given_trainer_field_wins_and_replaces_only_itself():
  c = config_from_flags(
    f"{ISING}:laptop", "--config.prox.num_stages=5", "--config.num_steps=7", "--config.eval_every=0"
  )
  assert (c.num_steps, c.eval_every, c.checkpoint_every, c.log_every) == (7, 0, 32, 32)
  c = config_from_flags(f"{ISING}:laptop,num_steps=7", "--config.prox.epochs_per_stage=1")
  assert (c.num_steps, c.checkpoint_every, c.eval_every, c.log_every) == (7, 8, 8, 8)
  # smoke sets the trainer fields (20 steps, log 5, checkpoint 10, no periodic eval)
  c = config_from_flags(f"{ISING}:smoke", "--config.prox.num_stages=9")
  assert (c.num_steps, c.log_every, c.checkpoint_every, c.eval_every) == (20, 5, 10, 0)


@pytest.mark.parametrize(
  "name,lr,b1,b2",
  [
    ("gmm2d", 1e-3, 0.9, 0.999),
    ("ising", 1e-3, 0.9, 0.999),
    ("potts", 1e-3, 0.9, 0.999),
    ("dw4", 1e-4, 0.5, 0.9),
    ("lj13", 1e-4, 0.5, 0.9),
  ],
)
def test_default_optim_of_each_config(name, lr, b1, b2):
  # The configs' documented settings: Adam, constant lr, grad clip 100 (dw4 / lj13: lr 1e-4
  # with betas (0.5, 0.9), the reference particle scripts').
  c = config_from_flags(f"experiments/configs/pdns/{name}.py")
  assert set(c.optim.keys()) == set(core_optim.optim_defaults().keys())
  o = c.optim
  assert (o.name, o.learning_rate, o.b1, o.b2, o.grad_clip, o.schedule) == (
    "adam",
    lr,
    b1,
    b2,
    100.0,
    "constant",
  )
  p = method.prox_config(c)
  assert (p.learning_rate, p.b1, p.b2, p.grad_clip) == (lr, b1, b2, 100.0)
  assert not set(OLD_KEYS) & set(config_lib.flat_fields(c))


def test_optim_override_reaches_the_stage_optimiser():
  c = config_from_flags(
    f"{ISING}:smoke",
    "--config.optim.learning_rate=0.02",
    "--config.optim.b2=0.9",
    "--config.optim.grad_clip=5.0",
  )
  p = method.prox_config(c)
  assert (p.learning_rate, p.b1, p.b2, p.grad_clip) == (0.02, 0.9, 0.9, 5.0)
  assert p == method.prox_config(
    config_from_flags(f"{ISING}:smoke,optim.learning_rate=0.02,optim.b2=0.9,optim.grad_clip=5.0")
  )
  # The first Adam step of the chain the stages train with is -lr * g / (|g| + eps).
  tx = p.optimizer(10)
  g = jnp.asarray([0.5, -1.0, 1e-3], jnp.float32)
  upd, _ = tx.update(g, tx.init(jnp.zeros(3)), jnp.zeros(3))
  np.testing.assert_allclose(np.asarray(upd), -0.02 * np.sign(np.asarray(g)), rtol=1e-4)


@pytest.mark.parametrize(
  "arg,key",
  [
    ("optim.name=sgd", "optim.name"),
    ("optim.schedule=cosine", "optim.schedule"),
    ("optim.weight_decay=0.1", "optim.weight_decay"),
  ],
)
def test_optim_keys_the_stage_optimiser_does_not_read_stop(arg, key):
  with pytest.raises(config_lib.ConfigError, match=f"config key '{key}'"):
    _get_config("ising", f"smoke,{arg}")
  cfg = config_from_flags(f"{ISING}:smoke", f"--config.{arg}")
  with pytest.raises(config_lib.ConfigError, match=f"config key '{key}'"):
    method.prox_config(cfg)


@pytest.mark.parametrize("old,new", sorted(OLD_KEYS.items()))
def test_old_prox_keys_name_the_new_key(old, new):
  assert config_lib.RENAMED_KEYS[old] == new
  with pytest.raises(config_lib.ConfigError, match=f"'{old}' was renamed: use '{new}'"):
    _get_config("gmm2d", f"smoke,{old}=1")
  # experiments.main checks --config.KEY flags with the same function before absl parses them
  assert f"use '{new}'" in str(config_lib.renamed_key_error(old))


def test_renamed_table_lists_exactly_the_moved_keys():
  assert {k for k in config_lib.RENAMED_KEYS if k.startswith("prox.")} == set(OLD_KEYS)
  assert {k.split(".", 1)[1] for k in OLD_KEYS} == set(method.OPTIM_FIELDS.values())

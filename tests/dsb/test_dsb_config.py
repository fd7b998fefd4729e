"""The DSB run config: ``config.optim`` is the solvers' optimiser, built into the solver
dataclasses in one place (``dsb.method.solver_config``); the old ``hparams.*`` optimiser keys stop
with an error naming the new key.

Oracles: the paper's optimiser settings (AdamW, constant lr 1e-2 for DLightSB /
DLightSB-M, 1e-4 for CSBM, 1e-3 for alpha-CSBM, betas (0.95, 0.99), PyTorch's weight decay 0.01),
written out here; the solver dataclasses' own defaults (the standalone API) for "nothing else
changed"; the first Adam step of the built optax chain (-lr sign(g)) for "the override reaches the
optimiser". No training, no compile.
"""

import dataclasses
import importlib

import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim as core_optim
from iclr26_jax.dsb import method as dsb_method
from iclr26_jax.dsb.solvers import csbm as csbm_lib
from iclr26_jax.dsb.solvers import dlightsb as dls
from tests.conftest import config_from_flags

PAPER_LR = {"dlightsb": 1e-2, "dlightsb_m": 1e-2, "csbm": 1e-4, "alpha_csbm": 1e-3}
SOLVERS = tuple(PAPER_LR)


def _config(solver, arg):
  """``get_config(arg)`` of ``experiments/configs/dsb/<solver>.py``."""
  return importlib.import_module(f"experiments.configs.dsb.{solver}").get_config(arg)


OLD_KEYS = {
  "hparams.optimizer": "optim.name",
  "hparams.learning_rate": "optim.learning_rate",
  "hparams.b1": "optim.b1",
  "hparams.b2": "optim.b2",
  "hparams.weight_decay": "optim.weight_decay",
  "hparams.grad_clip": "optim.grad_clip",
}


@pytest.mark.parametrize("solver", SOLVERS)
def test_default_optim_is_the_papers_and_the_solver_is_unchanged(solver):
  cfg = _config(solver, None)
  o = cfg.optim
  assert set(o.keys()) == set(core_optim.optim_defaults().keys())
  assert (o.name, o.learning_rate, o.b1, o.b2, o.weight_decay, o.grad_clip, o.schedule) == (
    "adamw",
    PAPER_LR[solver],
    0.95,
    0.99,
    0.01,
    0.0,
    "constant",
  )
  # The dataclass built from the run config is the standalone API's default one.
  entry = dsb_method.SOLVERS[solver]
  want = entry.config_cls(
    train_steps=entry.paper_steps, steps_per_chunk=1, batch_size=128, **(entry.fixed or {})
  )
  assert dsb_method.solver_config(cfg) == want
  # The optimiser left hparams; every other dataclass field is still there.
  fields = {f.name for f in dataclasses.fields(entry.config_cls)}
  assert set(cfg.hparams.keys()) == fields - set(dsb_method.OPTIM_FIELDS.values()) - {
    "train_steps",
    "steps_per_chunk",
    "batch_size",
  }


def _first_adam_step(tx, g):
  params = jnp.zeros_like(g)
  updates, _ = tx.update(g, tx.init(params), params)
  return np.asarray(updates)


@pytest.mark.parametrize("solver", SOLVERS)
def test_optim_override_reaches_the_solver_and_its_optimiser(solver):
  arg = "smoke,optim.learning_rate=0.03,optim.b1=0.5,optim.grad_clip=2.0,optim.weight_decay=0.0"
  via_arg = dsb_method.solver_config(_config(solver, arg))
  via_flags = dsb_method.solver_config(
    config_from_flags(
      f"experiments/configs/dsb/{solver}.py:smoke",
      "--config.optim.learning_rate=0.03",
      "--config.optim.b1=0.5",
      "--config.optim.grad_clip=2.0",
      "--config.optim.weight_decay=0.0",
    )
  )
  assert via_arg == via_flags
  assert (
    via_arg.learning_rate,
    via_arg.b1,
    via_arg.b2,
    via_arg.grad_clip,
    via_arg.weight_decay,
  ) == (0.03, 0.5, 0.99, 2.0, 0.0)
  # The optax chain the solver trains with: the first Adam(W) step is -lr * g / (|g| + eps).
  make_tx = dls._make_tx if solver.startswith("dlightsb") else csbm_lib._make_tx
  g = jnp.asarray([0.5, -1.0, 1e-3], jnp.float32)
  np.testing.assert_allclose(
    _first_adam_step(make_tx(via_arg), g), -0.03 * np.sign(np.asarray(g)), rtol=1e-4
  )


def test_optim_name_reaches_dlightsb_and_csbm_stays_adamw():
  cfg = _config("dlightsb", "smoke,optim.name=adam")
  assert dsb_method.solver_config(cfg).optimizer == "adam"
  with pytest.raises(config_lib.ConfigError, match=r"'optim.name'.*adamw.*got 'adam'"):
    _config("csbm", "smoke,optim.name=adam")


@pytest.mark.parametrize("solver", ("dlightsb", "alpha_csbm"))
@pytest.mark.parametrize(
  "arg,key",
  [
    ("optim.schedule=cosine", "optim.schedule"),
    ("optim.eps=1e-6", "optim.eps"),
    ("optim.learning_rate=-1.0", "optim.learning_rate"),
    ("optim.b2=1.5", "optim.b2"),
  ],
)
def test_optim_values_the_solver_cannot_take_stop_naming_the_key(solver, arg, key):
  with pytest.raises(config_lib.ConfigError, match=f"config key '{key}'"):
    _config(solver, f"smoke,{arg}")
  # The flag form (applied by absl after get_config) stops when the method builds the solver.
  cfg = config_from_flags(f"experiments/configs/dsb/{solver}.py:smoke", f"--config.{arg}")
  with pytest.raises(config_lib.ConfigError, match=f"config key '{key}'"):
    dsb_method.solver_config(cfg)


@pytest.mark.parametrize("old,new", sorted(OLD_KEYS.items()))
def test_old_hparams_keys_name_the_new_key(old, new):
  assert config_lib.RENAMED_KEYS[old] == new
  for solver in ("dlightsb", "csbm"):
    with pytest.raises(config_lib.ConfigError, match=f"'{old}' was renamed: use '{new}'"):
      _config(solver, f"smoke,{old}=1")
  cfg = _config("dlightsb", "smoke")
  config_lib.require(cfg, new)
  assert old.split(".", 1)[1] not in cfg.hparams


def test_renamed_table_lists_exactly_the_moved_keys():
  assert {k for k in config_lib.RENAMED_KEYS if k.startswith("hparams.")} == set(OLD_KEYS)
  assert {k.split(".", 1)[1] for k in OLD_KEYS} == set(dsb_method.OPTIM_FIELDS.values())

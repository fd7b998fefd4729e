"""Test helper: restore a toy run's newest checkpoint onto this process's single-device mesh."""

import os

import jax

from experiments.configs.toy import regression
from iclr26_jax.core import sharding as shd
from experiments import toy
from iclr26_jax.core.checkpoint import Checkpointer, abstract_like


def restore_toy(workdir, arg: str):
  """``(step, arrays)`` of the newest checkpoint of a toy run made with config ``arg``
  (restored onto one device, whatever topology wrote it)."""
  method = toy.ToyRegression(regression.get_config(arg))
  abstract = jax.eval_shape(method.init_state, jax.random.PRNGKey(0)).arrays()
  rep = shd.replicated(shd.make_mesh({"data": 1}))
  ck = Checkpointer(os.path.join(workdir, "checkpoints"))
  try:
    return ck.restore(abstract_like(abstract, jax.tree.map(lambda _: rep, abstract)))
  finally:
    ck.close()

"""AnyBCQ's tiny LM as a trainer ``Method`` (``anybcq.method``): batches and config validation.

The run itself is tested elsewhere: ``tests/anybcq/test_anybcq_lm.py`` checks ``method.train_lm``
(this method through ``core.trainer``) against a hand-written AdamW loop, and
``tests/harness/test_main.py`` runs ``experiments/configs/anybcq/lm.py:smoke`` through
``experiments.main``, then resumes it. Exact resume rests on the batches below being a function
of (seed, step) alone (the trainer's own test checks bitwise resume given that).
Oracles: numpy indexing of the stream at offsets drawn by ``np.random.default_rng([seed,
step])``; the config's own keys for the validation errors.
"""

import numpy as np
import pytest

from experiments.configs.anybcq import lm as lm_config_file
from iclr26_jax.anybcq import method as method_lib
from iclr26_jax.core import config as config_lib


def test_batches_are_windows_drawn_from_seed_and_step_alone():
  cfg = lm_config_file.get_config("smoke,seed=5")
  first, again = method_lib.AnyBCQLMMethod(cfg), method_lib.AnyBCQLMMethod(cfg)
  ctx, b = cfg.lm.context, cfg.batch_size
  assert first.train.size == cfg.data.train_bytes and first.valid.shape == (16, ctx + 1)
  for step in (7, 3, 7):  # any order: no generator state carries over between steps
    tokens = first.get_batch(step)["tokens"]
    starts = np.random.default_rng([5, step]).integers(0, first.train.size - ctx - 1, b)
    np.testing.assert_array_equal(tokens, first.train[starts[:, None] + np.arange(ctx + 1)])
    np.testing.assert_array_equal(tokens, again.get_batch(step)["tokens"])
    assert tokens.shape == (b, ctx + 1) and tokens.dtype == np.int32
  assert not np.array_equal(first.get_batch(3)["tokens"], first.get_batch(4)["tokens"])


@pytest.mark.parametrize(
  "override,message",
  [
    ("lm.heads=3", "'lm.width' = 32 must be divisible by lm.heads = 3"),
    ("quant.methods=(anybcq,gptq)", "'quant.methods' must be distinct names"),
    ("quant.bits=(3,2)", "'quant.bits' bits must be strictly increasing"),
    ("quant.eval=sometimes", "'quant.eval' must be one of"),
    ("data.train_bytes=20", "'data.train_bytes' = 20 must exceed lm.context + 1 = 33"),
    ("optim.schedule=linear", "config section 'optim': optim.schedule must be"),
  ],
)
def test_bad_config_is_a_config_error_naming_the_key(override, message):
  # The config file validates when it is built (config_lib.experiment(validate=...)); the method
  # validates again for configs built in code.
  with pytest.raises(config_lib.ConfigError) as info:
    lm_config_file.get_config("smoke," + override)
  assert message in str(info.value)
  cfg = method_lib.default_config()
  config_lib.apply_overrides(cfg, {"lm.width": 32, "lm.context": 32, "data.train_bytes": 20_000})
  config_lib.apply_overrides(cfg, dict([override.split("=", 1)]))
  with pytest.raises(config_lib.ConfigError) as info:
    method_lib.AnyBCQLMMethod(cfg)
  assert message in str(info.value)

"""Train one experiment: ``python -m experiments.main --config=FILE.py[:ARG] --workdir=DIR``.

Dispatches on ``config.method`` through ``experiments.registry``. Run the same command again to
resume from the workdir; on a TPU pod or multi-host GPU job run it on every host with
``--multihost`` (or ICLR26_MULTIHOST=1).
"""

import sys

from absl import app, flags, logging
from ml_collections import config_flags

from iclr26_jax.core import distributed

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Experiment config file, optionally with ':arg' (e.g. ':smoke,seed=3').",
    lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory (checkpoints, metrics, config).")
_MULTIHOST = flags.DEFINE_bool(
    "multihost", False, "Call jax.distributed.initialize() before touching devices.")
flags.mark_flags_as_required(["config", "workdir"])


def parse_flags(argv):
  """absl parsing, with config mistakes reported as one line naming the key."""
  try:
    return flags.FLAGS(argv)
  except (flags.Error, AttributeError, KeyError, TypeError, ValueError) as e:
    msg = str(e).strip().strip("\"'").replace("\\n", " ")
    print(f"config error: {msg}\n(see --help)", file=sys.stderr)
    sys.exit(2)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)  # Orbax is chatty at INFO; -v 0 brings it back
  distributed.maybe_initialize(_MULTIHOST.value)
  from experiments import registry  # after distributed init: nothing touches devices first
  from iclr26_jax.core import trainer
  config = _CONFIG.value
  method = registry.get_method(config.method)(config)
  result = trainer.train(method, config, _WORKDIR.value)
  if distributed.is_primary():
    print(f"done: step {int(result.state.step)} in {result.workdir}; "
          f"metrics {result.metrics}; eval {result.eval_metrics}", file=sys.stderr)


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)

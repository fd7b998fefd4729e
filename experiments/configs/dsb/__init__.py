"""DSB experiment configs; ``validate`` is the method's check before a run starts
(``experiments.registry``)."""


def validate(config) -> None:
  """Range checks of a DSB run config before the run starts (``experiments.registry.VALIDATORS``):
  the solver's own (``dsb.method.solver_config``) plus the benchmark and evaluation sizes, each
  naming its dotted key (``core.config.ConfigError``)."""
  from iclr26_jax.core import config as config_lib
  from iclr26_jax.dsb import method

  config_lib.positive(
    config,
    "benchmark.dim",
    "benchmark.num_categories",
    "benchmark.num_potentials",
    "benchmark.num_steps",
    "hparams.hidden",
    "hparams.num_layers",
    "hparams.epoch_steps",
    "hparams.chunk_elements",
    "eval.num_test",
    "eval.cond_samples",
    "eval.traj_samples",
    "eval.point_every",
    "eval.exact_max_states",
    optional=True,
  )
  config_lib.nonneg(
    config,
    "benchmark.alpha",
    "benchmark.bump_sigma",
    "benchmark.source_range",
    "benchmark.num_skip_steps",
    "hparams.num_first_iterations",
    optional=True,
  )
  config_lib.fraction(config, "hparams.ema_decay", optional=True)
  method.solver_config(config)

"""Generate an OGBench manipulation dataset locally with the scripted oracles (no download).

  python -m experiments.ogbench_generate --env=puzzle-3x3-play-v0 --episodes=1000 \\
      --episode_length=1000 --dataset_dir=~/.ogbench/data --seed=0

Writes ``<dataset_dir>/<env>.npz`` and ``<env>-val.npz`` (``--val_fraction`` extra episodes, at
least one) in the layout OGBench's ``load_dataset`` reads; ``iclr26_jax.qam.envs.ogbench_generate``
describes the driver (oracles, noise, file layout) and its speed. Needs the ``[rl]`` extra
(``pip install -e ".[rl]"``). A missing dataset file is an error that prints this command.
"""

from __future__ import annotations

import sys

from absl import app, flags

from experiments import _cli

NAMES = (
  "env",
  "episodes",
  "episode_length",
  "dataset_dir",
  "seed",
  "val_fraction",
  "noise",
  "p_random_action",
)


def define_flags(fv: flags.FlagValues = flags.FLAGS) -> None:
  """Defines this tool's flags in ``fv`` (called only when the file is the program)."""
  flags.DEFINE_string(
    "env", None, "Dataset name, e.g. puzzle-3x3-play-v0, cube-double-noisy-v0.", flag_values=fv
  )
  flags.DEFINE_integer("episodes", 1000, "Training episodes.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer(
    "episode_length",
    1000,
    "Transitions per episode after loading (L + 1 rows are recorded).",
    lower_bound=1,
    flag_values=fv,
  )
  flags.DEFINE_string("dataset_dir", "~/.ogbench/data", "Output directory.", flag_values=fv)
  flags.DEFINE_integer(
    "seed", 0, "Seed of the training episodes (validation: seed + 1000000).", flag_values=fv
  )
  flags.DEFINE_float(
    "val_fraction",
    0.1,
    "Validation episodes as a fraction of --episodes.",
    lower_bound=0.0,
    upper_bound=1.0,
    flag_values=fv,
  )
  flags.DEFINE_float("noise", 0.1, "Noisy style: max noise level.", lower_bound=0.0, flag_values=fv)
  flags.DEFINE_float(
    "p_random_action",
    None,
    "Noisy style: random-action probability (default 0.2 for puzzle, 0.1 otherwise).",
    lower_bound=0.0,
    upper_bound=1.0,
    flag_values=fv,
  )
  flags.mark_flag_as_required("env", flag_values=fv)


def run(
  *,
  env: str,
  episodes: int = 1000,
  episode_length: int = 1000,
  dataset_dir: str = "~/.ogbench/data",
  seed: int = 0,
  val_fraction: float = 0.1,
  noise: float = 0.1,
  p_random_action: float | None = None,
) -> dict:
  """Generates both files and prints one summary line; returns ``generate_to_dir``'s result."""
  from iclr26_jax.qam.envs import ogbench_generate

  res = ogbench_generate.generate_to_dir(
    env,
    dataset_dir,
    episodes,
    episode_length,
    seed=seed,
    val_fraction=val_fraction,
    progress=True,
    noise=noise,
    p_random_action=p_random_action,
  )
  print(
    f"wrote {res['train_path']} and {res['val_path']}: {res['steps']} steps in "
    f"{res['seconds']:.1f} s ({res['steps_per_second']:.0f} steps/s)"
  )
  return res


def main(argv, fv: flags.FlagValues = flags.FLAGS):
  _cli.no_arguments(argv)
  opts = _cli.values(fv, NAMES)
  from iclr26_jax.qam.envs import ogbench_generate

  try:
    ogbench_generate.parse_dataset_name(opts["env"])
  except ValueError as e:
    raise app.UsageError(f"--env: {e}") from None
  try:
    ogbench_generate.require_ogbench()
  except ImportError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  run(**opts)


if __name__ == "__main__":
  define_flags()
  _cli.run(main)

"""DLightSB (discrete LightSB, spec §8.1) on a CatSBench instance.

  python -m experiments.main --workdir=/tmp/dsb_dlightsb \
      --config=experiments/configs/dsb/dlightsb.py
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_d64 \
      --config=experiments/configs/dsb/dlightsb.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_tiny \
      --config=experiments/configs/dsb/dlightsb.py:tiny,hparams.num_potentials=64
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_smoke \
      --config=experiments/configs/dsb/dlightsb.py:smoke

Paper defaults: K = 1000 components, `samples` init (0.9 mass), log a ~ N(-2, 0.1^2), AdamW lr
1e-2, betas (0.95, 0.99), weight decay 0.01, batch 128, 100k steps; one-shot sampling at
evaluation.

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.get_config``.
"""

from iclr26_jax.dsb import method


def get_config(arg=None):
  return method.get_config("dlightsb", arg)

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

Variants: the instance, one of the 12 HD presets ``hd_d{2,16,64}_s50_prior_gaussian_a{0.02,0.05}``
/ ``hd_d{2,16,64}_s50_prior_uniform_a{0.005,0.01}`` (default ``hd_d16_s50_prior_gaussian_a0.02``;
D, S = 50, N = 15, s = 8) or ``tiny`` (D = 2, S = 10, N = 3, enumerable: exact KL / TV are
logged); ``smoke`` (20 steps, small model and evaluation, ``tiny`` unless a preset is named).
Overrides: ``benchmark.dim``, ``benchmark.num_categories``, ``benchmark.reference``,
``benchmark.alpha``, ``benchmark.seed``, ``benchmark.num_steps`` / ``num_skip_steps`` (keep
(N + 1) s = 128 for the paper's problem), any ``hparams.*`` field of the solver config,
``eval.cond_samples`` (1,000 in the paper), ``eval.num_test``. See ``iclr26_jax/dsb/method.py``.
"""

from iclr26_jax.dsb import method


def get_config(arg=None):
  return method.get_config("dlightsb", arg)

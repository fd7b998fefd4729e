"""alpha-CSBM (online CSBM: both directions in every step; spec §8.4).

  python -m experiments.main --workdir=/tmp/dsb_alpha_csbm \
      --config=experiments/configs/dsb/alpha_csbm.py
  python -m experiments.main --workdir=/tmp/dsb_alpha_csbm_d64 \
      --config=experiments/configs/dsb/alpha_csbm.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_alpha_csbm_tiny \
      --config=experiments/configs/dsb/alpha_csbm.py:tiny,hparams.ema_decay=0.99
  python -m experiments.main --workdir=/tmp/dsb_alpha_csbm_smoke \
      --config=experiments/configs/dsb/alpha_csbm.py:smoke

Paper defaults: SimpleMLP 3 x 128, one AdamW (lr 1e-3, betas (0.95, 0.99)) over both directions,
per-direction EMA 0.999, batch 128 split into two halves; phase 1 = 3 epochs of 20k steps on the
independent coupling, then online IMF with fresh EMA-model rollouts every step; 7 epochs = 140k
steps.

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
  return method.get_config("alpha_csbm", arg)

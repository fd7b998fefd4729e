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

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.get_config``.
"""

from iclr26_jax.dsb import method


def get_config(arg=None):
  return method.get_config("alpha_csbm", arg)

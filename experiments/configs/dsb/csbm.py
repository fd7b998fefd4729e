"""CSBM (alternating two-direction D-IMF, D3PM-style endpoint MLP; spec §8.3).

  python -m experiments.main --workdir=/tmp/dsb_csbm \
      --config=experiments/configs/dsb/csbm.py
  python -m experiments.main --workdir=/tmp/dsb_csbm_d64 \
      --config=experiments/configs/dsb/csbm.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_csbm_tiny \
      --config=experiments/configs/dsb/csbm.py:tiny,optim.learning_rate=1e-3
  python -m experiments.main --workdir=/tmp/dsb_csbm_smoke \
      --config=experiments/configs/dsb/csbm.py:smoke

Paper defaults: SimpleMLP 3 x 128, AdamW lr 1e-4, betas (0.95, 0.99), EMA 0.999, batch 128; the
trained direction alternates every 20k-step epoch (backward first), 3 warm-up cycles on the
independent coupling, 14 epochs = 280k steps; loss = sum_d KL (`hparams.loss=mse` for the MSE
variant).

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.get_config``.
"""

from iclr26_jax.dsb import method


def get_config(arg=None):
  return method.get_config("csbm", arg)

"""CSBM (Ksenofontov & Korotin, ICML 2025: alternating two-direction D-IMF, D3PM-style endpoint
MLP).

  python -m experiments.main --workdir=/tmp/dsb_csbm \
      --config=experiments/configs/dsb/csbm.py
  python -m experiments.main --workdir=/tmp/dsb_csbm_d64 \
      --config=experiments/configs/dsb/csbm.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_csbm_tiny \
      --config=experiments/configs/dsb/csbm.py:tiny,optim.learning_rate=1e-3
  python -m experiments.main --workdir=/tmp/dsb_csbm_smoke \
      --config=experiments/configs/dsb/csbm.py:smoke

Paper defaults: SimpleMLP 3 x 128, AdamW lr 1e-4, betas (0.95, 0.99), EMA 0.999, batch 128; the
trained direction alternates every 20k-step epoch (forward first, the reference's order), 3
warm-up cycles on the independent coupling, 14 epochs = 280k steps; loss = KL averaged over the D
coordinates (`hparams.kl_reduction=sum` sums it; `hparams.loss=mse` for the MSE variant).

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.variants``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.dsb import method


def get_config(arg=None):
  c = method.default_config("csbm")
  c.benchmark.preset = method.DEFAULT_PRESET  # the instance (a variant names another)
  c.seed = 5  # the reference scripts train with seed 5
  c.num_steps = 280_000
  c.batch_size = 128
  # SimpleMLP 3 x 128, EMA 0.999, epochs of 20k steps, 3 warm-up cycles on the independent coupling
  c.hparams.num_layers = 3
  c.hparams.hidden = 128
  c.hparams.ema_decay = 0.999
  c.hparams.epoch_steps = 20_000
  c.hparams.num_first_iterations = 3
  c.hparams.loss = "kl"
  c.hparams.kl_reduction = "mean"  # KL averaged over the D coordinates, the reference's
  c.hparams.first_direction = "forward"  # epoch 0 trains the forward model, the reference's
  # AdamW, constant lr 1e-4, betas (0.95, 0.99), weight decay 0.01
  c.optim.name = "adamw"
  c.optim.learning_rate = 1e-4
  c.optim.b1 = 0.95
  c.optim.b2 = 0.99
  c.optim.weight_decay = 0.01
  return config_lib.experiment(
    c, arg, method.variants(), one_of=method.ONE_PRESET, validate=method.solver_config
  )

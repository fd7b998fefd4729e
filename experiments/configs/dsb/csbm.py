"""CSBM (alternating two-direction D-IMF, D3PM-style endpoint MLP; spec §8.3).

  python -m experiments.main --workdir=/tmp/dsb_csbm \
      --config=experiments/configs/dsb/csbm.py
  python -m experiments.main --workdir=/tmp/dsb_csbm_d64 \
      --config=experiments/configs/dsb/csbm.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_csbm_tiny \
      --config=experiments/configs/dsb/csbm.py:tiny,hparams.learning_rate=1e-3
  python -m experiments.main --workdir=/tmp/dsb_csbm_smoke \
      --config=experiments/configs/dsb/csbm.py:smoke

Paper defaults: SimpleMLP 3 x 128, AdamW lr 1e-4, betas (0.95, 0.99), EMA 0.999, batch 128; the
trained direction alternates every 20k-step epoch (backward first), 3 warm-up cycles on the
independent coupling, 14 epochs = 280k steps; loss = sum_d KL (`hparams.loss=mse` for the MSE
variant).

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
  return method.get_config("csbm", arg)

"""DLightSB-M (discrete optimal projection / bridge matching, spec §8.2).

  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m \
      --config=experiments/configs/dsb/dlightsb_m.py
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_d64 \
      --config=experiments/configs/dsb/dlightsb_m.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_tiny \
      --config=experiments/configs/dsb/dlightsb_m.py:tiny,hparams.loss=kl
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_smoke \
      --config=experiments/configs/dsb/dlightsb_m.py:smoke

Paper defaults: as DLightSB, trained by bridge matching from the independent coupling, t ~ U{0..N};
`hparams.loss` = joint (ours, unbiased; default) | kl | mse (the released configs); 100k steps.

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.get_config``.
"""

from iclr26_jax.dsb import method


def get_config(arg=None):
  return method.get_config("dlightsb_m", arg)

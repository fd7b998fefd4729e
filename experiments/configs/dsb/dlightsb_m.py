"""DLightSB-M (discrete optimal projection / bridge matching).

  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m \
      --config=experiments/configs/dsb/dlightsb_m.py
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_d64 \
      --config=experiments/configs/dsb/dlightsb_m.py:hd_d64_s50_prior_uniform_a0.01
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_tiny \
      --config=experiments/configs/dsb/dlightsb_m.py:tiny,hparams.loss=kl
  python -m experiments.main --workdir=/tmp/dsb_dlightsb_m_smoke \
      --config=experiments/configs/dsb/dlightsb_m.py:smoke

Paper defaults: as DLightSB, trained by bridge matching from the independent coupling, t ~ U{0..N};
`hparams.loss` = kl (the reference's per-coordinate loss; default) | mse (the released configs)
| joint (ours, unbiased; also the ``dlightsb_m_joint`` solver); 100k steps.

Variants (the benchmark preset, ``tiny``, ``smoke``) and overrides: ``iclr26_jax.dsb.method.variants``.
"""

from experiments.configs.dsb import dlightsb
from iclr26_jax.core import config as config_lib
from iclr26_jax.dsb import method


def get_config(arg=None):
  c = dlightsb.settings("dlightsb_m")  # the DLightSB settings, trained by bridge matching
  c.hparams.coupling = "independent"  # bridge matching from the independent coupling
  c.hparams.loss = "kl"  # the reference per-coordinate KL (mse: the other released loss)
  c.hparams.time_sampling = "per_sample"  # t_b ~ U{0..N} per sample, the reference's
  return config_lib.experiment(
    c, arg, method.variants(), one_of=method.ONE_PRESET, validate=method.solver_config
  )

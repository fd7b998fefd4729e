"""MinPV on the block-diagonal Gaussian MI task (spec §14 T2 protocol, laptop scale).

  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py --workdir=/tmp/minpv
  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py:trig,data.dim=40 ...

Defaults: d = 10, MI = 2, KMM-MinPV joint (θ, φ) on the plain interpolant, a 3 × 128 network,
AdamW 1e-3 with cosine decay, EMA 0.999. Variants: ``smoke`` (a few steps, tiny network),
``trig`` (fixed trig path, conditional TSM), ``fixed`` (the spec §10 ``fixed`` preset: time-only
weights, exact weight variance, exact cross term), ``faithful`` (the reference switches, the
default). Override ``data.dim``, ``data.rho`` or ``data.mi``, ``path.name`` as ``key=value``.
"""

from iclr26_jax.minpv.config import experiment_config


def get_config(arg=None):
  return experiment_config(arg, {}, smoke_fields={"data.eval_size": 256})

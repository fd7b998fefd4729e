"""MinPV on the block-diagonal Gaussian MI task (spec §14 T2 protocol, laptop scale).

  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py --workdir=/tmp/minpv
  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py:trig,data.dim=40 ...

Defaults: d = 10, MI = 2, KMM-MinPV joint (θ, φ) on the plain interpolant, a 3 × 128 network,
AdamW 1e-3 with cosine decay, EMA 0.999. Variants: ``smoke`` (a few steps, tiny network),
``trig`` (fixed trig path, conditional TSM), ``fixed`` (the spec §10 ``fixed`` preset: time-only
weights, exact weight variance, exact cross term), ``faithful`` (the reference switches, the
default). Override ``data.dim``, ``data.rho`` or ``data.mi``, ``path.name`` as ``key=value``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv.config import apply_fixed, default_config

VARIANTS = ("smoke", "trig", "fixed", "faithful")


def get_config(arg=None):
  c = default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.model.width = 128
  c.model.depth = 3
  c.model.time_features = 64
  c.optim.schedule = "cosine"
  c.ema_decay = 0.999
  if "trig" in variants:
    c.path.name = "trig"
    c.loss.objective = "conditional"
  if "fixed" in variants:
    apply_fixed(c)
  if "smoke" in variants:
    config_lib.apply_smoke(c, batch_size=128, **{"model.width": 32, "model.depth": 1,
                                                 "model.time_features": 16,
                                                 "data.eval_size": 256, "estimate.nodes": 20})
  return config_lib.finalize(c, arg, known_variants=VARIANTS)

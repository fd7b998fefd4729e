"""MinPV density estimation on scikit-learn's bundled 8 × 8 digits (offline MNIST stand-in).

  python -m experiments.main --config=experiments/configs/minpv/digits.py --workdir=/tmp/digits

1797 images of 64 pixels in 0 … 16, a fixed 80/20 split; uniform dequantisation to (0, 1), the
RealNVP logit transform (λ = 0.05) and per-pixel standardisation; p0 = N(0, I) on the result.
``eval/nll`` is in nats per image on the dequantised pixel scale [0, 17)^64 (all preprocessing
Jacobians included), ``eval/bpd`` = nll / (64 ln 2), ``eval/nll_baseline`` the same for
log r̂ ≡ 0. KMM-MinPV joint on the plain interpolant, 4 × 256 residual network (reference width
for d < 200). Variants: ``smoke``, ``trig``, ``fixed``, ``faithful``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv.config import apply_fixed, default_config

VARIANTS = ("smoke", "trig", "fixed", "faithful")


def get_config(arg=None):
  c = default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.data.name = "digits"
  c.data.eval_size = 0          # the whole held-out split (359 images)
  c.num_steps = 5000
  c.batch_size = 512
  c.model.time_features = 128
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
                                                 "estimate.nodes": 20})
  return config_lib.finalize(c, arg, known_variants=VARIANTS)

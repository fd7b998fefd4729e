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
from iclr26_jax.minpv import config as minpv_config


def get_config(arg=None):
  c = minpv_config.default_config()
  c.model.width = 256  # the reference's 4 x 256 network (d < 200)
  c.model.depth = 4
  c.model.time_features = 128
  c.optim.schedule = "cosine"  # AdamW 1e-3 with cosine decay
  c.ema_decay = 0.999
  c.data.name = "digits"
  c.data.eval_size = 0  # the whole held-out split (359 images)
  c.num_steps = 5000
  c.batch_size = 512
  return config_lib.experiment(
    c,
    arg,
    {
      "trig": minpv_config.TRIG,
      "fixed": minpv_config.apply_fixed,
      "faithful": {},  # the reference's switches: the defaults here
      "smoke": minpv_config.SMOKE,
    },
  )

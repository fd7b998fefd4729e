"""MinPV density estimation on 2-D toy densities (the likelihood from the estimated log-ratio).

  python -m experiments.main --config=experiments/configs/minpv/density_2d.py --workdir=/tmp/d2
  python -m experiments.main \
      --config=experiments/configs/minpv/density_2d.py:trig,data.name=two_moons --workdir=...

p0 = N(0, I), p1 = the toy after standardisation with its analytic moments; log p̂(x) =
log r̂(z) + log N(z; 0, I) − Σ log std. ``data.name``: ``checkerboard`` (default, exact density
1/32 on its squares), ``eight_gaussians`` (exact mixture density), ``two_moons``. Logs
``eval/nll`` (data space, nats), ``eval/bpd``, ``eval/nll_baseline`` (N(0, I) in z) and
``eval/nll_true``. KMM-MinPV joint on the plain interpolant (p0 is exactly N(0, I)); 3 × 128
network, AdamW 1e-3 cosine, EMA 0.999. Variants: ``smoke``, ``trig``, ``fixed``, ``faithful``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv import config as minpv_config


def get_config(arg=None):
  c = minpv_config.default_config()
  c.model.width = 128  # 3 x 128 network, 64 time features
  c.model.depth = 3
  c.model.time_features = 64
  c.optim.schedule = "cosine"  # AdamW 1e-3 with cosine decay
  c.ema_decay = 0.999
  c.data.name = "checkerboard"  # or eight_gaussians, two_moons
  c.num_steps = 4000
  c.batch_size = 512
  return config_lib.experiment(
    c,
    arg,
    {
      "trig": minpv_config.TRIG,
      "fixed": minpv_config.apply_fixed,
      "faithful": {},  # the reference's switches: the defaults here
      "smoke": {**minpv_config.SMOKE, "data.eval_size": 256},
    },
  )

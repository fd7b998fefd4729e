"""MinPV density estimation on scikit-learn's bundled 8 × 8 digits (offline MNIST stand-in).

  python -m experiments.main --config=experiments/configs/minpv/digits.py --workdir=/tmp/digits

1797 images of 64 pixels in 0 … 16, a fixed 80/20 split; uniform dequantisation to (0, 1), the
RealNVP logit transform (λ = 0.05) and per-pixel standardisation; p0 = N(0, I) on the result.
``eval/nll`` is in nats per image on the dequantised pixel scale [0, 17)^64 (all preprocessing
Jacobians included), ``eval/bpd`` = nll / (64 ln 2), ``eval/nll_baseline`` the same for
log r̂ ≡ 0. KMM-MinPV joint on the plain interpolant, 4 × 256 residual network (reference width
for d < 200). Variants: ``smoke``, ``trig``, ``fixed``, ``faithful``.
"""

from iclr26_jax.minpv.config import experiment_config


def get_config(arg=None):
  # data.eval_size = 0: the whole held-out split (359 images); the reference's 4 × 256 network.
  return experiment_config(arg, {"data.name": "digits", "data.eval_size": 0, "num_steps": 5000,
                                 "batch_size": 512, "model.width": 256, "model.depth": 4,
                                 "model.time_features": 128})

"""MinPV on low-dimensional MI tasks with coordinate-wise nonlinear maps (spec §12).

  python -m experiments.main --config=experiments/configs/minpv/nonlinear_mi.py --workdir=/tmp/nl
  python -m experiments.main \
      --config=experiments/configs/minpv/nonlinear_mi.py:trig,data.name=asinh_mi --workdir=...

The correlated Gaussian pair (d/2 pairs) seen through the half-cube map x ↦ sign(x)|x|^{3/2}
(reference ``half_cube_map``; also ``asinh_mi``, ``cubic_mi``, ``gauss_mi`` via ``data.name``),
whose MI and pointwise log-ratio are those of the Gaussian pair; ``data.name=additive_noise_mi``
is the reference's ``additive_noise`` (Y = X + U(−ε, ε), ``data.noise_eps``) and
``data.name=gamma_exponential_mi`` its ``gamma_exponential`` (X ~ Gamma(k, 1), Y | X ~ Exp(X),
``data.gamma_shape``). p0 = product of marginals by shuffled pairing is not N(0, I), so the
default is the dequantified bridge (D3RE) with the KMM path; variant ``implicit`` uses DRE-∞'s implicit objective on the plain interpolant with the
(frozen) trig path. Defaults: d = 2, MI = 1 nat. Variants: ``smoke``, ``trig`` (fixed trig path,
conditional TSM), ``implicit``, ``fixed`` (spec §10 preset), ``faithful`` (the default switches).
Override ``data.name``, ``data.dim``, ``data.mi`` / ``data.rho``, ``path.name`` as key=value.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv.config import apply_fixed, default_config

VARIANTS = ("smoke", "trig", "implicit", "fixed", "faithful")


def get_config(arg=None):
  c = default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.data.name = "half_cube_mi"
  c.data.dim = 2
  c.data.mi = 1.0
  c.interpolant = "bridge"
  c.model.width = 128
  c.model.depth = 3
  c.model.time_features = 64
  c.optim.schedule = "cosine"
  c.ema_decay = 0.999
  if "trig" in variants:
    c.path.name = "trig"
    c.loss.objective = "conditional"
  if "implicit" in variants:
    c.interpolant = "plain"
    c.path.name = "trig"
    c.loss.objective = "implicit"
  if "fixed" in variants:
    apply_fixed(c)
  if "smoke" in variants:
    config_lib.apply_smoke(c, batch_size=128, **{"model.width": 32, "model.depth": 1,
                                                 "model.time_features": 16,
                                                 "data.eval_size": 256, "estimate.nodes": 20})
  return config_lib.finalize(c, arg, known_variants=VARIANTS)

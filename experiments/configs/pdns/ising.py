"""PDNS on the periodic Ising model (discrete masked-diffusion sampler, spec §3, §11, §15).

  python -m experiments.main --config=experiments/configs/pdns/ising.py --workdir=/tmp/pdns_ising
  python -m experiments.main --config=experiments/configs/pdns/ising.py:laptop --workdir=/tmp/pdns_ising8
  python -m experiments.main --config=experiments/configs/pdns/ising.py:laptop,baseline --workdir=/tmp/pdns_ising8_b
  python -m experiments.main --config=experiments/configs/pdns/ising.py:target.size=4,target.beta=0.4407 ...

Defaults: the paper's 24 x 24 lattice at beta = 0.6 (Fig. 1; below the critical temperature,
beta_c = 0.4407), h = 0, J = 1 (accelerator scale; no exact truth is logged there). MLP denoiser
2 x 256 on one-hot partially masked states (the paper uses a RoPE-ViT; the MLP is this room's
denoiser), lambda-form WDCE with 8 antithetic replicates, minibatch-normalised weights (discrete
reference), adaptive eps = 1, Eq. 8b, buffer 4096, batch 256, 4 epochs per stage, at most 30
proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99.

Variants: ``laptop`` (spec §15's CPU A/B setting: 8 x 8 at beta = 0.6, eps = 0.3, buffer 2048,
40 short stages, exact log Z and magnetisation law from the row transfer matrix), ``baseline``
(eta = infinity), ``smoke`` (3 x 3). Overridable: ``target.size``, ``target.beta``, ``target.h``,
``target.j``, ``prox.*``, ``sampler.*``. Exact references are logged for L <= 8.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method

VARIANTS = ("smoke", "baseline", "laptop")


def get_config(arg=None):
  c = method.default_config()
  variants, _ = config_lib.parse_arg(arg)
  c.target.update(dict(name="ising", size=24, beta=0.6, h=0.0, j=1.0, q=2))
  c.sampler.update(dict(hidden=256, depth=2, formulation="lambda", replicates=8, antithetic=True))
  c.prox.update(dict(buffer_size=4096, epochs_per_stage=4, num_stages=30, refine_stages=3,
                     epsilon=1.0, weighting="weight", normalize="minibatch", learning_rate=1e-3,
                     ema_decay=0.99))
  c.batch_size = 256
  if "laptop" in variants:
    c.target.size = 8
    c.sampler.hidden = 128
    c.prox.update(dict(buffer_size=2048, num_stages=40, epsilon=0.3))
  if "smoke" in variants:
    c.target.size = 3
  method.apply_variants(c, variants, VARIANTS)
  return method.finish_config(config_lib.finalize(c, arg, known_variants=VARIANTS), arg)

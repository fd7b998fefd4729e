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
``target.j``, ``prox.*``, ``optim.*``, ``sampler.*``. Exact references are logged for L <= 8.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import LATTICE_OPTIM, LATTICE_PROX, LATTICE_SAMPLER


def _laptop(c):
  c.target.size = 8
  c.sampler.hidden = 128
  c.prox.update(dict(buffer_size=2048, num_stages=40, epsilon=0.3))


def _smoke_size(c):
  c.target.size = 3


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="ising", size=24, beta=0.6, h=0.0, j=1.0, q=2), LATTICE_SAMPLER,
      LATTICE_PROX, batch_size=256, optim=LATTICE_OPTIM,
      extra_variants={"laptop": _laptop, "smoke": _smoke_size})

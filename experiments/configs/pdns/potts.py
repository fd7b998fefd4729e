"""PDNS on the periodic q-state Potts model (discrete masked-diffusion sampler).

  python -m experiments.main --config=experiments/configs/pdns/potts.py --workdir=/tmp/pdns_potts
  python -m experiments.main --config=experiments/configs/pdns/potts.py:target.beta=1.3 --workdir=/tmp/pdns_potts13
  python -m experiments.main --config=experiments/configs/pdns/potts.py:laptop --workdir=/tmp/pdns_potts4
  python -m experiments.main --config=experiments/configs/pdns/potts.py:laptop,baseline ...

Defaults: the paper's 16 x 16 lattice with q = 4 at the critical beta_c = ln 3 = 1.0986 (the ESS
row of the paper's table; beta = 1.3 is the magnetisation row), J = 1 (accelerator scale, no
exact truth logged). Sampler and schedule as in ``ising.py``: MLP denoiser 2 x 256, lambda-form
WDCE with 8 antithetic replicates, minibatch-normalised weights, adaptive eps = 1, buffer 4096,
batch 256, 4 epochs per stage, at most 30 proximal stages then 3 at eta = infinity.

Variants: ``laptop`` (4 x 4, q = 3, beta = 1.0, buffer 2048, eps = 0.3; exact log Z and order
parameter by streamed enumeration of the 3^16 states at start-up), ``baseline`` (eta =
infinity), ``smoke`` (3 x 3, q = 4). Overridable: ``target.size``, ``target.q``, ``target.beta``,
``target.j``, ``prox.*``, ``optim.*``, ``sampler.*``. Exact references are logged when
q^(L^2) <= 2^26.
"""

from experiments.configs.pdns.ising import lattice_config
from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def _laptop(c):
  c.target.update(dict(size=4, q=3, beta=1.0))
  c.sampler.hidden = 128
  c.prox.update(dict(buffer_size=2048, num_stages=40, epsilon=0.3))


def _smoke(c):
  method.smoke(c)
  c.target.update(dict(size=3, q=4))


def get_config(arg=None):
  return config_lib.experiment(
    lattice_config(name="potts", size=16, q=4, beta=1.0986, j=1.0),  # ising.py's sampler
    arg,
    {"laptop": _laptop, "baseline": method.BASELINE, "smoke": _smoke},
    validate=method.prox_config,
  )

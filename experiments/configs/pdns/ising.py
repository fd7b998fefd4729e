"""PDNS on the periodic Ising model (discrete masked-diffusion sampler).

  python -m experiments.main --config=experiments/configs/pdns/ising.py --workdir=/tmp/pdns_ising
  python -m experiments.main --config=experiments/configs/pdns/ising.py:laptop --workdir=/tmp/pdns_ising8
  python -m experiments.main --config=experiments/configs/pdns/ising.py:laptop,baseline --workdir=/tmp/pdns_ising8_b
  python -m experiments.main --config=experiments/configs/pdns/ising.py:target.size=4,target.beta=0.4407 ...

Defaults: the paper's 24 x 24 lattice at beta = 0.6 (Fig. 1; below the critical temperature,
beta_c = 0.4407), h = 0, J = 1 (accelerator scale; no exact truth is logged there). MLP denoiser
2 x 256 on one-hot partially masked states (the paper uses a RoPE-ViT; the MLP is this package's
denoiser), lambda-form WDCE with 8 antithetic replicates, minibatch-normalised weights (discrete
reference), adaptive eps = 1, Eq. 8b, buffer 4096, batch 256, 4 epochs per stage, at most 30
proximal stages then 3 at eta = infinity, Adam 1e-3, EMA 0.99.

Variants: ``laptop`` (a CPU A/B setting where the proximal benefit can show: 8 x 8 at beta =
0.6, eps = 0.3, buffer 2048, 40 short stages, exact log Z and magnetisation law from the row
transfer matrix), ``baseline`` (eta = infinity), ``smoke`` (3 x 3). Overridable: ``target.size``,
``target.beta``, ``target.h``, ``target.j``, ``prox.*``, ``optim.*``, ``sampler.*``. Exact
references are logged for L <= 8.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.pdns import method


def _laptop(c):
  c.target.size = 8
  c.sampler.hidden = 128
  c.prox.update(dict(buffer_size=2048, num_stages=40, epsilon=0.3))


def _smoke(c):
  method.smoke(c)
  c.target.size = 3


def lattice_config(**target):
  """The run config of a lattice target (Ising here, Potts in potts.py): its ``target`` fields,
  then the masked sampler and proximal schedule they share; unlocked."""
  c = method.default_config()
  c.target.update(target)
  # the masked discrete sampler
  c.sampler.hidden = 256
  c.sampler.depth = 2
  c.sampler.formulation = "lambda"
  c.sampler.replicates = 8
  c.sampler.antithetic = True
  # proximal stages: buffer, epochs per stage, stages then refine_stages at eta = infinity
  c.prox.buffer_size = 4096
  c.prox.epochs_per_stage = 4
  c.prox.num_stages = 30
  c.prox.refine_stages = 3
  c.prox.epsilon = 1.0
  c.prox.weighting = "weight"
  c.prox.normalize = "minibatch"
  c.prox.ema_decay = 0.99
  c.batch_size = 256
  # the stage optimiser (Adam, fresh every stage)
  c.optim.learning_rate = 1e-3
  return c


def get_config(arg=None):
  return config_lib.experiment(
    lattice_config(name="ising", size=24, beta=0.6, h=0.0, j=1.0, q=2),
    arg,
    {"laptop": _laptop, "baseline": method.BASELINE, "smoke": _smoke},
    validate=method.prox_config,
  )

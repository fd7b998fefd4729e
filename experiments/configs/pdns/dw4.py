"""PDNS on DW-4 (4 particles in 2-D, d = 8, double-well pair potential a = 0, b = -4, c = 0.9,
r0 = 4) with the centre-of-mass-free OU reference (noise and source on the 6-D zero-CoM
subspace, log nu with 6 degrees of freedom). No exact log Z: ``eval/log_z`` is an estimate;
``eval/energy_mean`` tracks the sampled energies.

  python -m experiments.main --config=experiments/configs/pdns/dw4.py --workdir=/tmp/pdns_dw4
  python -m experiments.main --config=experiments/configs/pdns/dw4.py:baseline --workdir=/tmp/pdns_dw4_b
  python -m experiments.main --config=experiments/configs/pdns/dw4.py:prox.epsilon=0.01,seed=1 ...

Defaults (spec §9 reference values for DW-4): OU reference with sigma_bar = 3, alpha linearly
20 -> 0.1 (int alpha = 10.05; the released code's 10 -> 0.1 leaves a residual correlation of
0.08), 100 Euler–Maruyama steps, control parameterisation and loss, MLP 2 x 128 (not
equivariant by default); adaptive step size with eps = 0.1 (reference range 0.01-0.1), Eq. 8b
stage target, multinomial resampling, buffer 10 000, batch 1000, 200 epochs per stage (reference 200-1000), at
most 10 proximal stages then 3 at eta = infinity, Adam lr 1e-4 with betas (0.5, 0.9) (reference
particle scripts), grad clip 100, weight clamp 100, EMA 0.999. Accelerator-scale at these
defaults. Variants: ``baseline`` (eta = infinity from the start), ``smoke``. Overridable:
``target.beta`` (inverse temperature), ``prox.*``, ``optim.*``, ``sampler.*``.
Reference samples (``eval.reference``, used for ``eval/energy_w2``, ``eval/distance_w2``,
``eval/distance_w1``, ``eval/distance_tv``): parallel tempering with MALA moves, 6 temperatures
(beta down to 0.2), 256 chains, 3000 adapted burn-in steps, then 40 draws per chain every 100
steps (10 240 samples), generated once (33 s on two shared CPU cores, 2026-12-01: split
R-hat 0.999 (energy) / 1.007 (mean pair distance), bulk ESS 11201 / 9611 of 10240, MALA
acceptance 0.57, swap rates 0.68-0.81; E = -22.57 +- 1.89; every 50 steps gave R-hat 1.017
for the mean distance) and cached in
``eval.reference.cache_dir`` (default ``workdirs/data/pdns_reference``; point it at the run's
data directory). ``smoke`` uses a tiny MCMC (MALA, 16 chains, 64 steps).
``sampler.network=egnn`` selects the E(n)-equivariant control network (``pdns.egnn``; ``sampler.hidden`` /
``sampler.depth`` its width and layers).
Noise floor of the metrics (one half of the chains against the other): energy W2 0.046,
distance W2 0.008, distance TV 0.020; the untrained sampler's CoM-free N(0, 9 I) scores
energy W2 4535, distance W2 2.1, TV 0.60.
"""

from iclr26_jax.pdns import method
from iclr26_jax.pdns.method import CONTINUOUS_OPTIM, CONTINUOUS_PROX, CONTINUOUS_SAMPLER


def get_config(arg=None):
  return method.experiment_config(
      arg, dict(name="dw4", dim=8), dict(CONTINUOUS_SAMPLER, sigma_bar=3.0),
      dict(CONTINUOUS_PROX, buffer_size=10000, epochs_per_stage=200, num_stages=10, epsilon=0.1,
           ema_decay=0.999), batch_size=1000,
      optim=dict(CONTINUOUS_OPTIM, learning_rate=1e-4, b1=0.5, b2=0.9),
      reference=dict(num_samples=10240, chains=256, burnin=3000, thin=100, step_size=0.01,
                     init_scale=2.0, num_temps=6, min_beta=0.2, swap_every=10))

"""MinPV on the block-diagonal Gaussian MI task (laptop scale).

  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py --workdir=/tmp/minpv
  python -m experiments.main --config=experiments/configs/minpv/gaussian_mi.py:trig,data.dim=40 ...

Defaults: d = 10, MI = 2, KMM-MinPV (θ, φ trained jointly) on the plain interpolant with the
conditional objective and the ``fixed`` preset (``minpv.config.apply_fixed``: time-only weights,
exact variance in the weights), a 3 × 128 network, AdamW 1e-3 with cosine decay, EMA 0.999, 3000
steps of batch 1024; the loss normaliser is the deterministic grid mean and φ's gradient is
clipped apart from θ's (``loss.normalizer``, ``path.grad_clip``).

Why not the reference's switches (variant ``faithful``: joint objective with per-sample floored
weights, batch normaliser, one shared clip)? Measured at d = 6, MI = 1.5 with these sizes:
faithful 3.11 (3.67 with the new normaliser and clipping) against a truth of 1.50, while the
default here gives 1.47. The per-sample floored weights leave the network almost
unconstrained where the learned path spends much of its time (α → 0), and that region enters
the integral ∫ s dt with full weight.

One variant per row of the MI table:

  (default)   KMM-MinPV: learned Kumaraswamy-mixture path, conditional objective, MinPV penalty
  trig        fixed trig path, conditional time-score matching (no penalty, no normaliser)
  implicit    DRE-∞: fixed trig path, implicit objective; model.time_scale resolves to 30
  bridge      D3RE: dequantified bridge on the linear schedule with the implicit objective (the
              reference's d3re default), bridge γ = 1 (γ = 0.01 gave a conditional target with
              signal-to-noise 4e-3 and learned nothing at laptop budgets)
  quadratic   the parametric Gaussian time score (``networks.QuadraticTimeScore``; combine with
              any of the above), the model class of the published d = 40…160 numbers
  fixed       the ``fixed`` preset (time-only weights, exact variance, exact cross term;
              part of the default here)
  faithful    the reference's switches: joint objective (on the KMM path), per-sample floored
              weights, abs cross term, batch normaliser, one shared clip
  paper       the reference's scale for accelerators: batch 9600, 3000 steps, 4 × 256, 512
              time features (~110× the samples of the laptop claim)
  smoke       a few steps, tiny network

Override ``data.dim``, ``data.rho`` or ``data.mi``, ``path.name`` as ``key=value``.
"""

from iclr26_jax.core import config as config_lib
from iclr26_jax.minpv import config as minpv_config


def _implicit(c):
  c.path.name = "trig"
  c.loss.objective = "implicit"


def _bridge(c):
  c.interpolant = "bridge"
  c.path.name = "linear"
  c.loss.objective = "implicit"
  c.bridge.gamma = 1.0


def _quadratic(c):
  c.model.kind = "quadratic"


def _faithful(c):
  if c.path.name == "kmm":
    c.loss.objective = "joint"
  c.loss.weights = "per_sample"
  c.loss.var_for_weights = "floored"
  c.loss.cross_term = "abs"
  c.loss.normalizer = "batch"
  c.path.grad_clip = 0.0


def _paper(c):
  c.batch_size = 9600
  c.num_steps = 3000
  c.model.width = 256
  c.model.depth = 4
  c.model.time_features = 512


def get_config(arg=None):
  c = minpv_config.default_config()
  c.model.width = 128  # 3 x 128 network, 64 time features
  c.model.depth = 3
  c.model.time_features = 64
  c.optim.schedule = "cosine"  # AdamW 1e-3 with cosine decay
  c.ema_decay = 0.999
  # the conditional objective with the ``fixed`` preset's weights (see the docstring)
  c.loss.objective = "conditional"
  c.loss.weights = "time_only"
  c.loss.var_for_weights = "exact"
  c.loss.cross_term = "exact"
  return config_lib.experiment(
    c,
    arg,
    {
      "trig": minpv_config.TRIG,
      "implicit": _implicit,
      "bridge": _bridge,
      "quadratic": _quadratic,
      "faithful": _faithful,
      "paper": _paper,
      "fixed": minpv_config.apply_fixed,
      "smoke": {**minpv_config.SMOKE, "data.eval_size": 256},
    },
  )

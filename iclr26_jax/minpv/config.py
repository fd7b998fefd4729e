"""Default MinPV config (one comment per field; the fields: docs/methods/minpv.md).

Defaults are the faithful settings of the reference code github.com/Hoemr/OpenDRE under
``--mvp --condition True`` (Chen et al., "Don't Forget Its Variance! The Minimum Path Variance
Principle …", ICLR 2026) at laptop sizes (d = 10, batch 1024, 3000 steps), less two departures
that ``experiments/configs/minpv/gaussian_mi.py:faithful`` undoes (``loss.normalizer``,
``path.grad_clip``); ``model.time_scale`` resolves per objective.
"""

import ml_collections

from iclr26_jax.core import config as config_lib
from iclr26_jax.core import optim


def default_config() -> ml_collections.ConfigDict:
  c = config_lib.trainer_defaults()
  c.method = "minpv"
  c.seed = 3407  # reference seed
  c.num_steps = 3000  # optimizer steps (reference f-divergence default: 3000 epochs)
  c.batch_size = 1024  # pairs (x0, x1) per step (reference 9600; D3RE 512)
  c.log_every = 500
  c.eval_every = 0  # evaluate at the end only
  c.checkpoint_every = 1000
  c.ema_decay = 0.0  # EMA of all params for evaluation (0 = off; T2 uses 0.999)

  c.optim = optim.optim_defaults()
  c.optim.name = "adamw"  # reference optimiser
  c.optim.learning_rate = 1e-3  # reference LR (network; the path shares it unless path.lr > 0)
  c.optim.weight_decay = 1e-5  # network weight decay
  c.optim.grad_clip = 1.0  # global-norm clip of the network (and of φ when path.grad_clip <= 0)

  c.data = ml_collections.ConfigDict()
  # Task (method.TASKS): MI "gaussian_mi", "gauss_mi", "half_cube_mi", "asinh_mi", "cubic_mi",
  # "additive_noise_mi", "gamma_exponential_mi" | density "two_moons", "eight_gaussians",
  # "checkerboard", "digits", "uci" (each described in docs/methods/minpv.md).
  c.data.name = "gaussian_mi"
  c.data.dim = 10  # d of the MI tasks (even: d/2 correlated pairs); density: ignored
  c.data.mi = -1.0  # target MI in nats; <= 0 = reference rule (2 for d <= 10, else d/4)
  c.data.rho = -1.0  # block correlation; >= 0 overrides data.mi
  c.data.gamma_shape = 1.0  # gamma_exponential_mi: shape k (MI = d/2 (ψ(k) − log k + 1/k))
  c.data.noise_eps = 0.1  # additive_noise_mi: Y = X + U(−ε, ε), ε ≤ ½ (MI = d/2 (ε − log 2ε))
  c.data.eval_size = 4096  # MI / toys: held-out samples; digits / uci: test rows (0 = all)
  c.data.eval_seed = 1  # seed of the held-out samples (and of the digits test noise)
  c.data.path = ""  # uci: folder with train/val/test.npy, or a .npz / .csv file
  c.data.standardize = True  # density: z = (x − mean)/std (toys: analytic, else training stats)
  c.data.test_fraction = 0.2  # digits: held-out fraction of the 1797 images (fixed split)
  c.data.logit_lambda = 0.05  # digits: w = logit(λ + (1 − 2λ) v) after dequantisation

  c.interpolant = "plain"  # "plain" (x_t = αx0 + βx1, needs p0 = N(0, I)) | "bridge" (D3RE)
  c.bridge = ml_collections.ConfigDict()
  c.bridge.gamma = 0.01  # bridge γ in v_t = γt(1 − t) + ε_b(α² + β²) (a variance)
  c.bridge.eps_b = 0.005  # bridge ε_b, the reference's sample_noise_std (a variance)

  c.path = ml_collections.ConfigDict()
  c.path.name = "kmm"  # "kmm" (MinPV) | "linear" | "vp" | "cosine" | "follmer" | "trig"
  c.path.constraint = "spherical"  # kmm β: "spherical" √(1 − α²) (reference) | "affine" 1 − α
  c.path.num_components = 5  # K of the Kumaraswamy mixture (reference --K_gmm 5)
  c.path.eps = 1e-5  # clip of t and α (reference --eps)
  c.path.training = "joint"  # "joint" (reference) | "presolve_freeze" (fit J first) | "frozen"
  c.path.weight_decay = 1e-5  # AdamW weight decay of φ (f-divergence runs: shared 1e-5)
  c.path.lr = -1.0  # peak LR of φ; <= 0 = the network's
  c.path.grad_clip = 1.0  # > 0: φ's own global-norm clip, apart from θ's | <= 0: shared (reference)
  c.path.presolve_steps = 2000  # Adam steps of the path-only fit (presolve_freeze)
  c.path.presolve_lr = 3e-2  # LR of the path-only fit

  c.loss = ml_collections.ConfigDict()
  c.loss.objective = "joint"  # "conditional" | "joint" (+ data head; reference) | "implicit"
  c.loss.weights = "per_sample"  # "per_sample" 1/Var(t, ζ_i) (reference) | "time_only"
  c.loss.var_for_weights = "floored"  # "floored" v = α² + δ in the weights (reference) | "exact"
  c.loss.var_floor = 1e-5  # δ of the floored variance (always used by the penalty)
  c.loss.target_eps = 1e-5  # 1/(α + target_eps) in the plain target (0 = exact)
  c.loss.cross_term = "abs"  # bridge variance cross term: "abs" (reference) | "exact"
  c.loss.penalty_t = "fresh"  # penalty times: "fresh" uniform (reference) | "same" as regression
  c.loss.time_sampler = "uniform"  # "uniform" on [ε, 1 − ε] | "lognorm" | "is" ∝ 1/Var(t), λ = 1
  c.loss.is_moments = "unit"  # IS variance with d = 1, ‖x1‖² = 1 (reference) | "data" (batch)
  c.loss.is_grid = 10000  # IS grid points
  c.loss.is_refresh = 1000  # steps between refreshes of the IS grid's φ (trainable path)
  c.loss.data_weight = 1.0  # multiplier of the joint data-score loss
  c.loss.normalizer = "grid"  # penalty only: "grid" (64 fixed t) | "batch" (reference) | "none"
  c.loss.flip_cross_sign = False  # negative control only (wrong target); never in real runs

  c.model = ml_collections.ConfigDict()
  c.model.kind = "mlp"  # "mlp" residual network (reference) | "quadratic" (Gaussian MI only)
  c.model.width = 256  # residual MLP width (reference 256 for d < 200, else 512)
  c.model.depth = 4  # residual blocks (reference 4)
  c.model.time_features = 512  # sinusoidal time features (reference 512)
  c.model.norm = True  # LayerNorm in the blocks (reference: normalisation on)
  c.model.time_scale = 0.0  # embedding sees time_scale·t; <= 0: implicit 30, else 1000 (reference)

  c.estimate = ml_collections.ConfigDict()
  c.estimate.method = "trapezoid"  # "trapezoid" (reference) | simpson | euler | rk4 | dopri5
  c.estimate.nodes = 100  # quadrature nodes / fixed-step grid points (reference 100)
  c.estimate.grid = "uniform"  # "uniform" in t (reference) | "path" (uniform in 1 − α)
  c.estimate.t_start = 0.0  # lower end of the t integral
  c.estimate.gap_factor = 4  # eval/quad_gap: nodes vs gap_factor × nodes (dopri5: tol / 100)
  c.estimate.rtol = 1e-5  # dopri5 relative tolerance (reference 1e-5)
  c.estimate.atol = 1e-5  # dopri5 absolute tolerance (reference 1e-5)
  c.estimate.max_steps = 2000  # dopri5 bound on attempted steps
  c.estimate.chunk = 8192  # evaluation points per jitted batch
  return c


def apply_fixed(c: ml_collections.ConfigDict) -> None:
  """The ``fixed`` preset, the reference's departures from the exact derivation undone: time-only
  weights, exact variance in the weights (floored penalty), exact bridge cross term."""
  c.loss.weights = "time_only"
  c.loss.var_for_weights = "exact"
  c.loss.cross_term = "exact"


# -- the variants the experiment configs share (``experiments/configs/minpv/*.py``) ----------
TRIG = {"path.name": "trig", "loss.objective": "conditional"}
"""The ``trig`` variant: the fixed trig path with conditional time-score matching."""

SMOKE = {
  **config_lib.SMOKE_TRAINER,
  "batch_size": 128,
  "model.width": 32,
  "model.depth": 1,
  "model.time_features": 16,
  "estimate.nodes": 20,
}
"""The ``smoke`` variant: a few steps, a tiny network, 20 integration nodes (a config adds its
own small sizes, e.g. ``{**SMOKE, "data.eval_size": 256}``)."""

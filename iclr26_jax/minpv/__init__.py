"""MinPV: minimum path variance for score-based (time-score) density-ratio estimation.

Implements Wei Chen, Jiacheng Li, Shigui Li, Zhiqi Lin, Junmei Yang, John Paisley, Delu Zeng,
"Don't Forget Its Variance! The Minimum Path Variance Principle for Accurate and Stable
Score-Based Models" (ICLR 2026, arXiv 2602.00834); behaviour follows the reference PyTorch code
github.com/Hoemr/OpenDRE (``--mvp --condition True``, path class ``KMMBayesianTrajectory``).

Modules: `paths` (fixed schedules, the Kumaraswamy-mixture path, plain and bridge interpolants),
`losses` (conditional / joint / implicit time-score matching, closed-form target variances, the
MinPV penalty, the two-group optimiser), `networks` (time-conditioned residual score network),
`estimator` (quadrature or ODE solve of the time score: log-ratio, KL / MI, likelihood),
`benchmarks` (block-diagonal Gaussian MI and its coordinate-wise mapped versions, with analytic
truth), `data` (2-D toy densities, scikit-learn digits, UCI loader), `analysis` (path variance
J, geodesic, path-only optimisation), `config` and `method` (trainer integration).
"""

from iclr26_jax.minpv.analysis import (Geodesic, PathFit, geodesic, length_squared, metric,
                                       optimize_path, path_variance_integral, t_grid)
from iclr26_jax.minpv.benchmarks import (MAPS, GaussianMITask, MappedMITask, apply_map,
                                         default_mi, invert_map, make_mapped_task,
                                         make_task, mapped_log_ratio, rho_for_mi,
                                         sample_joint, sample_marginals, sample_p0, sample_p1,
                                         shuffle_pairs, time_score, time_score_second_moment,
                                         true_log_ratio)
from iclr26_jax.minpv.data import (TOYS, Standardizer, load_digits_pixels, load_uci,
                                   logit_transform, sample_toy, toy_log_density, toy_moments)
from iclr26_jax.minpv.estimator import (integrate_dopri5, integrate_fixed_step,
                                        integrate_time_score, kl_estimate, log_likelihood,
                                        mi_estimate, quadrature_grid, simpson_weights,
                                        std_normal_logpdf, trapezoid_weights)
from iclr26_jax.minpv.losses import (LossSettings, bridge_target, bridge_variance_of_target,
                                     conditional_loss, implicit_loss, is_log_probs,
                                     make_joint_optimizer, minpv_loss, plain_target, plain_variance,
                                     sample_times)
from iclr26_jax.minpv.networks import ScoreNetwork, sinusoidal_embedding
from iclr26_jax.minpv.paths import (PathCoeffs, bridge_variance, cosine, follmer, get_path,
                                    init_path_params, interpolate_bridge, interpolate_plain, kmm,
                                    kmm_init, kmm_shapes, linear, trig, vp)

__all__ = [
    "MAPS", "MappedMITask", "Standardizer", "TOYS", "apply_map", "integrate_dopri5",
    "integrate_fixed_step", "invert_map", "is_log_probs", "load_digits_pixels", "load_uci",
    "logit_transform", "make_mapped_task", "mapped_log_ratio", "sample_joint", "sample_marginals", "sample_toy",
    "shuffle_pairs", "simpson_weights", "toy_log_density", "toy_moments",
    "GaussianMITask", "Geodesic", "LossSettings", "PathCoeffs", "PathFit", "ScoreNetwork",
    "bridge_target", "bridge_variance", "bridge_variance_of_target", "conditional_loss", "cosine",
    "default_mi", "follmer", "geodesic", "get_path", "implicit_loss", "init_path_params",
    "integrate_time_score", "interpolate_bridge", "interpolate_plain", "kl_estimate", "kmm",
    "kmm_init", "kmm_shapes", "length_squared", "linear", "log_likelihood", "true_log_ratio",
    "make_joint_optimizer", "make_task", "metric", "mi_estimate", "minpv_loss", "optimize_path",
    "path_variance_integral", "plain_target", "plain_variance", "quadrature_grid", "rho_for_mi",
    "sample_p0", "sample_p1", "sample_times", "sinusoidal_embedding", "std_normal_logpdf",
    "t_grid", "time_score", "time_score_second_moment", "trapezoid_weights", "trig", "vp",
]

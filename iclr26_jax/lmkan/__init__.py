"""lmKAN: lookup multivariate Kolmogorov-Arnold networks in JAX.

Sergey Pozdnyakov & Philippe Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR 2026,
arXiv 2509.07103; reference PyTorch + CUDA code github.com/schwallergroup/lmkan.

Entry points: `LMKANDense` (a `flax.linen.Dense`-like layer), `make_network` (BatchNorm before every
lmKAN layer, or the same-shape ReLU MLP) and the training recipe for an optax loop,
`recipe_optimizer` or its pieces `two_phase_schedule` and `hessian_penalty`. Modules: `grid`,
`reference` (lookup), `layer`, `regularizers`, `refine`, `networks`, `flops`, `data`.

The algorithm, with its equations and reference hyperparameters:
docs/methods/lmkan.md ("The algorithm").
"""

from iclr26_jax.lmkan.flops import (
  ModelCost,
  count_model,
  count_params,
  linear_flops,
  linear_params,
  lmkan_flops,
  lmkan_net_flops,
  lmkan_overhead,
  lmkan_params,
  mlp_flops,
)
from iclr26_jax.lmkan.grid import SigmaGrid, laplace_cdf, laplace_icdf, out_of_grid_fraction
from iclr26_jax.lmkan.layer import (
  LMKANDense,
  affine_init,
  affine_table,
  from_reference_layout,
  noise_init,
  resolve_impl,
  to_reference_layout,
)
from iclr26_jax.lmkan.networks import (
  CNN,
  LMKANCNN,
  LMKANConv,
  LMKANNet,
  MLP,
  make_network,
  patches_kkc,
)
from iclr26_jax.lmkan.reference import (
  spline_lookup_dense,
  spline_lookup_gather,
  spline_lookup_xla,
  spline_lookup_vjp,
)
from iclr26_jax.lmkan.refine import refine_grid, refine_table, refinement_matrix
from iclr26_jax.lmkan.regularizers import (
  TwoPhaseSchedule,
  add_hessian_penalty,
  hessian_operator,
  hessian_penalty,
  hessian_penalty_table,
  recipe_optimizer,
  two_phase_schedule,
  two_phase_schedule_from_config,
)

__all__ = [
  "CNN",
  "LMKANCNN",
  "LMKANConv",
  "LMKANDense",
  "LMKANNet",
  "MLP",
  "ModelCost",
  "SigmaGrid",
  "TwoPhaseSchedule",
  "add_hessian_penalty",
  "affine_init",
  "affine_table",
  "count_model",
  "count_params",
  "from_reference_layout",
  "hessian_operator",
  "hessian_penalty",
  "hessian_penalty_table",
  "laplace_cdf",
  "laplace_icdf",
  "linear_flops",
  "linear_params",
  "lmkan_flops",
  "lmkan_net_flops",
  "lmkan_overhead",
  "lmkan_params",
  "make_network",
  "mlp_flops",
  "noise_init",
  "out_of_grid_fraction",
  "patches_kkc",
  "recipe_optimizer",
  "refine_grid",
  "refine_table",
  "refinement_matrix",
  "resolve_impl",
  "spline_lookup_xla",
  "spline_lookup_dense",
  "spline_lookup_gather",
  "spline_lookup_vjp",
  "to_reference_layout",
  "two_phase_schedule",
  "two_phase_schedule_from_config",
]

"""Pure-jnp reference of the lmKAN lookup — a re-export of `kernels_pallas.spline_lookup.reference`.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). The gather
form, the dense hat-matrix form and the closed-form `custom_vjp` live next to the Pallas kernels they
are the oracle for (the kernels may import only JAX); the package keeps this import path. Shapes: x
(B, P, 2) batch-first, table (P, G+1, G+1, Q), output (B, Q).
"""

from kernels_pallas.spline_lookup.reference import (
  check_lookup_args,
  corner_weights,
  hat_matrix,
  spline_lookup_dense,
  spline_lookup_xla,
  spline_lookup_gather,
  spline_lookup_vjp,
)

__all__ = [
  "check_lookup_args",
  "corner_weights",
  "spline_lookup_xla",
  "spline_lookup_gather",
  "spline_lookup_dense",
  "spline_lookup_vjp",
  "hat_matrix",
]

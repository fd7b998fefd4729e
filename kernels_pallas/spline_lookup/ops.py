"""Public op: `spline_lookup` — the lmKAN 2-D spline lookup, differentiable, any shape.

lmKAN (Sergey Pozdnyakov & Philippe Schwaller, "lookup multivariate Kolmogorov-Arnold Networks", ICLR
2026, arXiv 2509.07103; reference PyTorch + CUDA code github.com/schwallergroup/lmkan):

    y[b, q] = Σ_p f_qp(x[b, p, 0], x[b, p, 1]),   f_qp bilinear on the (G+1)×(G+1) table T[p, :, :, q]

over the non-uniform sigma grid (`grid.py`), with linear extrapolation outside the grid.

Dispatch (`impl`):
* "xla": `reference.spline_lookup_xla` (pure jnp, closed-form `custom_vjp`) — the oracle and the fallback;
* "pallas": the kernels with a `custom_vjp` tying forward and backward (residuals x and the table only;
  cells and weights are recomputed), chosen from the block table by backend (`blocks.py`):
  - GPU rows: variant "mgpu", the Mosaic GPU kernels (`kernel_mgpu.py`: forward, owner-computes dT and
    dx, all by uniform row loads);
  - TPU rows: variant "portable" (`kernel_portable.py`, the smaller per-unit roofline estimate);
  - explicit choices through `block_sizes`: variant "gather" (`kernel_tpu_gather.py` on TPU;
    `kernel_triton_gather.py` on GPU, with the owner-computes portable dT unless `dtable="atomic"`)
    and, on GPU, variant "portable" with Triton parameters. Pallas's Triton backend is deprecated
    (jax 0.11): the Triton kernels run only when asked for this way, never by default;
* "auto": the kernels on TPU and on CUDA GPUs of compute capability ≥ 9.0 (Hopper, Blackwell: where
  the Mosaic GPU kernels are compiled and tested, for sm_90a), the XLA path elsewhere — CPU, and GPUs
  before Hopper: Mosaic GPU in jax 0.12 also targets Ampere and the kernels use no Hopper-only
  instruction, but they are not compiled or tested for sm_80/sm_86 here, so `impl="pallas"` there
  is an explicit choice (guarded by the first-use self-check, which falls back to XLA). The chosen
  path is logged once per configuration at trace time.

Inputs are batch-first (B, P, 2); the batch-last kernel layouts, the padding of B, P, Q and the corner
axis to block multiples, and the slicing back are internal. Padded samples and outputs carry zero
cotangents and padded corners receive no weight, so gradients of the real entries are unaffected.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import numbers

import jax
import jax.numpy as jnp

from kernels_pallas import _backend
from kernels_pallas import _selfcheck
from kernels_pallas.spline_lookup import blocks
from kernels_pallas.spline_lookup import kernel_mgpu as km
from kernels_pallas.spline_lookup import kernel_portable as kp
from kernels_pallas.spline_lookup import kernel_tpu_gather as ktg
from kernels_pallas.spline_lookup import kernel_triton_gather as kg
from kernels_pallas.spline_lookup import reference
from kernels_pallas.spline_lookup.grid import SigmaGrid

__all__ = ["spline_lookup", "resolve_path", "mgpu_capable", "BlockSizes"]

BlockSizes = blocks.BlockSizes
_LOG = logging.getLogger(__name__)
_LOGGED: set = set()


def _log_once(key, msg: str) -> None:
  if key not in _LOGGED:
    _LOGGED.add(key)
    _LOG.info(msg)


def resolve_path(impl: str, platform: str | None = None) -> tuple[str, str | None]:
  """`(path, kernel platform)`: path "xla" or "pallas"; the platform ("tpu"/"gpu") names the kernels.

  `platform=None` means the default backend's kernels (on a CPU host, where kernels only run in
  interpret mode, the TPU-parameterised ones).
  """
  if platform is not None and platform not in blocks.PLATFORMS:
    raise ValueError(f"platform must be None or one of {blocks.PLATFORMS}; got {platform!r}")
  host = _backend.backend()
  path = _backend.resolve_impl(impl, host)
  if impl == "auto" and path == "pallas" and host == "gpu" and not mgpu_capable():
    path = "xla"
  if path == "xla":
    return "xla", None
  if platform is None:
    platform = host if host in blocks.PLATFORMS else "tpu"
  return "pallas", platform


MGPU_MIN_CAPABILITY = 9.0  # Hopper: the Mosaic GPU kernels are compiled and tested for sm_90a


def mgpu_capable() -> bool:
  """True when the GPU the kernels are built for has compute capability ≥ 9.0 (Hopper, Blackwell):
  where `impl="auto"` runs the Mosaic GPU kernels (`_backend.gpu_capability`, which also sees a
  compile-only `jax.default_device`)."""
  cc = _backend.gpu_capability()
  return cc is not None and cc >= MGPU_MIN_CAPABILITY


@dataclasses.dataclass(frozen=True)
class _Static:
  """Everything static about one kernel call (hashable: the custom_vjp's nondiff argument)."""

  grid: SigmaGrid
  platform: str
  plan: blocks.Plan
  interpret: bool


def _node_columns(st: _Static, dtype):
  """Nodes t_0..t_G and inverse widths r_0..r_{G−1}, zero padded to (G1_pad,)."""
  g1 = st.plan.g1_pad
  t = jnp.pad(st.grid.node_array(dtype), (0, g1 - (st.grid.G + 1)))
  r = jnp.pad(st.grid.inv_width_array(dtype), (0, g1 - st.grid.G))
  return t, r


def _to_kernel_layout(st: _Static, x, table):
  """x (B, P, 2) → (P_pad, 2, B_pad); table (P, G+1, G+1, Q) → (P_pad, C_pad, Q_pad), or corners
  last, (P_pad, Q_pad, C_pad), for the TPU gather kernels (a transpose of the table per call)."""
  pl_ = st.plan
  b, p, _ = x.shape
  q = table.shape[-1]
  g1 = st.grid.G + 1
  xt = jnp.pad(jnp.transpose(x, (1, 2, 0)), ((0, pl_.p_pad - p), (0, 0), (0, pl_.b_pad - b)))
  tf = jnp.pad(
    table.reshape(p, g1 * g1, q), ((0, pl_.p_pad - p), (0, pl_.c_pad - g1 * g1), (0, pl_.q_pad - q))
  )
  if _tpu_gather(st):
    tf = jnp.transpose(tf, (0, 2, 1))
  return xt, tf


def _tpu_gather(st: _Static) -> bool:
  return st.platform == "tpu" and st.plan.config.variant == "gather"


def _tpu_or_gpu_kwargs(st: _Static):
  cfg = st.plan.config
  return dict(
    platform=st.platform,
    num_warps=cfg.num_warps,
    num_stages=cfg.num_stages,
    vmem_limit_bytes=cfg.vmem_limit_bytes,
    interpret=st.interpret,
  )


def _forward(st: _Static, x, table):
  """Kernel forward on unpadded operands: (B, P, 2), (P, G+1, G+1, Q) → (B, Q)."""
  b, q = x.shape[0], table.shape[-1]
  cfg, pl_ = st.plan.config, st.plan
  xt, tf = _to_kernel_layout(st, x, table)
  t, r = _node_columns(st, x.dtype)
  if cfg.variant == "mgpu":
    y = km.mgpu_forward(
      xt, tf, t, r, G=st.grid.G, bb=cfg.fwd_bb, bq=cfg.fwd_bq, pc=cfg.fwd_bp, interpret=st.interpret
    )
    return y[:b, :q]
  if _tpu_gather(st):
    y = ktg.tpu_gather_forward(
      xt,
      tf,
      t[:, None],
      r[:, None],
      G=st.grid.G,
      bq=cfg.fwd_bq,
      bb=cfg.fwd_bb,
      bp=cfg.fwd_bp,
      vmem_limit_bytes=cfg.vmem_limit_bytes,
      interpret=st.interpret,
    )
    return y[:b, :q]
  if cfg.variant == "gather":
    y = kg.gather_forward(
      xt,
      tf.reshape(pl_.p_pad * pl_.c_pad, pl_.q_pad),
      t,
      r,
      G=st.grid.G,
      c_pad=pl_.c_pad,
      bb=cfg.fwd_bb,
      bq=cfg.fwd_bq,
      num_warps=cfg.num_warps,
      num_stages=cfg.num_stages,
      interpret=st.interpret,
    )
    return y[:b, :q]
  bp = cfg.fwd_bp if st.platform == "tpu" else pl_.p_pad
  y = kp.portable_forward(
    xt,
    tf,
    t[:, None],
    r[:, None],
    G=st.grid.G,
    bq=cfg.fwd_bq,
    bb=cfg.fwd_bb,
    bp=bp,
    **_tpu_or_gpu_kwargs(st),
  )
  return y[:q, :b].T


def _backward(st: _Static, x, table, g):
  """Kernel VJP: g (B, Q) → (dx (B, P, 2), dT (P, G+1, G+1, Q))."""
  b, p, _ = x.shape
  q = table.shape[-1]
  g1 = st.grid.G + 1
  cfg, pl_ = st.plan.config, st.plan
  xt, tf = _to_kernel_layout(st, x, table)
  t, r = _node_columns(st, x.dtype)
  g_pad = jnp.pad(g.astype(x.dtype), ((0, pl_.b_pad - b), (0, pl_.q_pad - q)))  # (B_pad, Q_pad)
  kw = _tpu_or_gpu_kwargs(st)
  gpu = st.platform == "gpu"
  if cfg.variant == "mgpu":
    dx = km.mgpu_input_grad(xt, tf, g_pad, t, r, G=st.grid.G, n_pairs=p, interpret=st.interpret)
    dt = km.mgpu_table_grad(
      xt,
      g_pad,
      t,
      r,
      G=st.grid.G,
      c_pad=pl_.c_pad,
      bq=cfg.dt_bq,
      bc=cfg.dt_bc,
      n_pairs=p,
      interpret=st.interpret,
    )
    dx = jnp.transpose(dx[:, :, :b], (2, 0, 1))
    return dx, dt[:, : g1 * g1, :q].reshape(p, g1, g1, q)
  if _tpu_gather(st):
    dx = ktg.tpu_gather_input_grad(
      xt,
      tf,
      g_pad.T,
      t[:, None],
      r[:, None],
      G=st.grid.G,
      bb=cfg.dx_bb,
      bq=cfg.dx_bq,
      vmem_limit_bytes=cfg.vmem_limit_bytes,
      interpret=st.interpret,
    )
  elif cfg.variant == "gather":
    dx = kg.gather_input_grad(
      xt,
      tf,
      g_pad,
      t,
      r,
      G=st.grid.G,
      bb=cfg.dx_bb,
      bq=cfg.dx_bq,
      num_warps=cfg.num_warps,
      num_stages=cfg.num_stages,
      interpret=st.interpret,
    )
  else:
    dx = kp.portable_input_grad(
      xt,
      tf,
      g_pad.T,
      t[:, None],
      r[:, None],
      G=st.grid.G,
      bb=cfg.dx_bb,
      bqo=pl_.q_pad if gpu else cfg.dx_bq,
      bq=cfg.dx_bq,
      **kw,
    )
  if cfg.dtable == "atomic":
    dt = kg.atomic_table_grad(
      xt,
      g_pad,
      t,
      r,
      G=st.grid.G,
      c_pad=pl_.c_pad,
      bb=cfg.fwd_bb,
      bq=cfg.fwd_bq,
      num_warps=cfg.num_warps,
      num_stages=cfg.num_stages,
      interpret=st.interpret,
    ).reshape(pl_.p_pad, pl_.c_pad, pl_.q_pad)
  else:
    dt = kp.portable_table_grad(
      xt,
      g_pad.T,
      t[:, None],
      r[:, None],
      G=st.grid.G,
      c_pad=pl_.c_pad,
      bq=cfg.dt_bq,
      bbo=pl_.b_pad if gpu else cfg.dt_bb,
      bb=cfg.dt_bb,
      **kw,
    )
  dx = jnp.transpose(dx[:p, :, :b], (2, 0, 1))
  dt = dt[:p, : g1 * g1, :q].reshape(p, g1, g1, q)
  return dx, dt


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _lookup(st, x, table):
  return _forward(st, x, table)


def _lookup_fwd(st, x, table):
  return _forward(st, x, table), (x, table)


def _lookup_bwd(st, res, g):
  x, table = res
  return _backward(st, x, table, g)


_lookup.defvjp(_lookup_fwd, _lookup_bwd)


def _self_check(st: _Static, b: int, p: int, q: int, dtype) -> tuple[float, float]:
  """The kernels of ``st`` (forward, dx and dT) against the XLA reference on random operands of
  ``(b, p, 2)`` / ``(p, G+1, G+1, q)`` (``b`` ≤ the plan's padded batch: the same compiled
  kernels): ``(max relative error, tolerance)``, each error relative to the reference's max |·|.
  Run eagerly by ``_selfcheck.trusted``."""
  kx, kt, kg = jax.random.split(jax.random.PRNGKey(20261), 3)
  g1 = st.grid.G + 1
  x = (1.5 * jax.random.normal(kx, (b, p, 2))).astype(dtype)  # some outside the grid
  table = jax.random.uniform(kt, (p, g1, g1, q), minval=-0.1, maxval=0.1).astype(dtype)
  cot = jax.random.normal(kg, (b, q)).astype(dtype)

  def both(fn, x, table, cot):
    y, vjp = jax.vjp(fn, x, table)
    return (y, *vjp(cot))

  got = jax.jit(functools.partial(both, functools.partial(_lookup, st)))(x, table, cot)
  ref = jax.jit(functools.partial(both, lambda x, t: reference.spline_lookup_xla(x, t, st.grid)))(
    x, table, cot
  )
  err = 0.0
  for a, r in zip(got, ref):
    a, r = a.astype(jnp.float32), r.astype(jnp.float32)
    scale = jnp.maximum(jnp.max(jnp.abs(r)), 1e-30)
    err = max(err, float(jnp.max(jnp.abs(a - r)) / scale))
  return err, (1e-2 if jnp.dtype(dtype).itemsize >= 4 else 5e-2)


def spline_lookup(
  x,
  table,
  grid,
  *,
  impl: str = "auto",
  interpret: bool | None = False,
  block_sizes: BlockSizes | None = None,
  platform: str | None = None,
):
  """The lmKAN lookup y[b, q] = Σ_p f_qp(x[b, p, 0], x[b, p, 1]), differentiable in x and the table.

  Args:
    x: (B, P, 2) float32, bfloat16 or float16 (float64 on the XLA path or in interpret mode),
      batch-first pairs of consecutive inputs. bfloat16 / float16 operands compute in float32 (the
      XLA path: the reference's `accumulation_dtype`; the Pallas path: both operands are upcast to
      float32 for the float32 kernels) and y, dx and dT are rounded once to the operands' dtype.
    table: (P, G+1, G+1, Q), x's dtype; first grid axis ↔ first input of the pair.
    grid: `SigmaGrid` (or an int G ≥ 3).
    impl: "auto" | "xla" | "pallas" (see the module docstring).
    interpret: run the Pallas kernels in interpret mode (CPU); None: interpret when the host has no
      accelerator. Ignored on the XLA path.
    block_sizes: a `BlockSizes` to use instead of the block-table row (clamped to the problem); its
      `variant` selects the kernels ("mgpu": Mosaic GPU; "portable" / "gather": on GPU the Triton
      kernels, an explicit choice only).
    platform: "tpu" or "gpu": whose kernels and compiler parameters to use (default: the host's; on a
      CPU host "tpu"). Tests and cross-lowering set it.
  Returns:
    y: (B, Q) in x's dtype.
  Raises:
    ValueError: wrong ranks, shapes or dtypes, G < 3, bad block sizes; each message names the
      argument.
  """
  if isinstance(grid, numbers.Integral) and not isinstance(grid, bool):
    grid = SigmaGrid(int(grid))
  b, p, q = reference.check_lookup_args(x, table, grid)
  path, kplat = resolve_path(impl, platform)
  if path == "xla":
    _log_once(("xla", grid.G), f"spline_lookup: XLA reference path (impl={impl!r}, G={grid.G})")
    return reference.spline_lookup_xla(x, table, grid)
  if block_sizes is not None and not isinstance(block_sizes, BlockSizes):
    raise ValueError(f"block_sizes must be a BlockSizes or None; got {type(block_sizes).__name__}")
  # interpret=False on a CPU host is allowed: it is how cross-lowering (`.lower(lowering_platforms=
  # ("tpu",))`) traces the real kernels; running such a call on CPU fails in Pallas with "Only interpret
  # mode is supported on CPU backend".
  interp = _backend.resolve_interpret(interpret)
  if x.dtype == jnp.float64 and not interp:
    raise ValueError(
      f"x must be float32, bfloat16 or float16 for the compiled Pallas kernels, got {x.dtype} "
      "(float64 runs on impl='xla' or in interpret mode)."
    )
  pl_ = blocks.plan(kplat, grid.G, b, p, q, block_sizes)
  st = _Static(grid, kplat, pl_, interp)
  _log_once(
    (kplat, grid.G, pl_.config, interp),
    f"spline_lookup: Pallas {pl_.config.variant} kernels for {kplat} (G={grid.G}, "
    f"interpret={interp}, blocks={pl_.config})",
  )
  kdt = jnp.dtype(jnp.float32 if jnp.dtype(x.dtype).itemsize < 4 else x.dtype)  # the kernels' dtype
  if not _selfcheck.trusted(
    "spline_lookup",
    f"{kplat} {pl_.config.variant} G={grid.G} {kdt.name}{' interpret' if interp else ''}",
    (st, kdt.name),
    functools.partial(_self_check, st, min(b, 256), p, q, kdt),
    platform=kplat,
    interpret=interp,
    package="spline_lookup",
  ):
    return reference.spline_lookup_xla(x, table, grid)
  if x.dtype in reference.LOW_PRECISION_DTYPES:
    # The kernels compute in float32: upcast both operands, round y once. Autodiff through the casts
    # returns dx and dT in the operands' low-precision dtype (each rounded once from the f32 kernels).
    return _lookup(st, x.astype(jnp.float32), table.astype(jnp.float32)).astype(x.dtype)
  return _lookup(st, x, table)

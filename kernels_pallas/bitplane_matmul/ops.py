"""Public op: ``bitplane_matmul`` — AnyBCQ multi-precision matmul on packed shared bit-planes.

AnyBCQ (Park, Bae, Kwon, Kim, Kwon, Lee; ICLR 2026; reference code github.com/naver-aics/anybcq)
stores binary planes B_0..B_{NB-1} once and per-precision scales, and serves precision p as

    y = x @ W^(p),   W^(p) = beta^(p) + sum_{b < p} alpha^(p)_b * B_b      (per group of g inputs)

Dispatch (``impl``):

* ``"xla"``: ``reference.bitplane_matmul_reference`` (dequantize + matmul), differentiable by JAX.
* ``"pallas"``: the TPU (Mosaic) or GPU kernel, with a ``custom_vjp`` (``jax.grad`` does
  not pass through ``pallas_call``) whose backward is the pure-jnp
  ``reference.bitplane_matmul_backward``: dx, dalpha and dbeta, planes fixed (no cotangent for the
  integer planes and precisions).
* ``"auto"``: the kernel on TPU and on CUDA GPUs of compute capability >= 9.0 when g is a kernel
  group size (64/128/256) and a Mosaic GPU kernel serves the call (below); the XLA path elsewhere,
  CPU and GPUs before Hopper included. The chosen path is logged once per configuration at trace
  time.

GPU kernels (Mosaic GPU; ``_backend.gpu_capability``: the attached GPU, or ``jax.default_device``
set to a compile-only GPU device; None without a GPU, e.g. lowering for CUDA on a CPU host, which
is treated as Hopper):

* calls of at most ``blocks.LUT_MAX_M`` rows with N % 128 == 0 on Hopper and newer: the
  lookup-table GEMV (``kernel_mgpu``; no interpret mode);
* every other call on Hopper (9.x), and every GPU call in interpret mode: the wgmma kernel
  (``kernel_wgmma``, ``blocks.WGMMA_TABLE``);
* anything else (Ampere; Blackwell beyond the LUT rows, where wgmma does not exist) has no
  default kernel: ``impl="auto"`` takes the XLA path, ``impl="pallas"`` raises.

The Triton kernel (``kernel_gpu``; Pallas's Triton backend is deprecated since jax 0.11) runs only
when asked for: ``config=BlockConfig("partials" | "dequant", ...)`` with ``platform="gpu"``. An
explicit ``config`` of variant ``"lut"`` or ``"wgmma"`` picks that Mosaic GPU kernel.

TPU, float16 activations: x is widened to f32 once per call (TPU has no float16 vectors) and the
kernel writes f32, narrowed to float16 after it (a float16 output block failed in Mosaic on v5e
and v6e: "failed to legalize operation 'xir.pack_subelements'", M = 1 and 8).

``precision`` is data (an int32 scalar, or one precision per row of x for a mixed-precision batch),
so changing it does not recompile. Operands are padded to block multiples (M always; N only when
it is not a multiple of 128 on TPU, 64 for the wgmma kernel, 16 for Triton, which copies planes
and scales on every call) and the output is sliced back.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np

from kernels_pallas import _backend
from kernels_pallas import _dots
from kernels_pallas import _selfcheck
from kernels_pallas.bitplane_matmul import blocks
from kernels_pallas.bitplane_matmul import format as fmt
from kernels_pallas.bitplane_matmul import kernel_gpu
from kernels_pallas.bitplane_matmul import kernel_mgpu
from kernels_pallas.bitplane_matmul import kernel_tpu
from kernels_pallas.bitplane_matmul import kernel_wgmma
from kernels_pallas.bitplane_matmul import reference

_LOG = logging.getLogger(__name__)
_LOGGED: set = set()
PLATFORMS = ("tpu", "gpu")


def _log_once(key, msg: str) -> None:
  if key not in _LOGGED:
    _LOGGED.add(key)
    _LOG.info(msg)


def resolve_path(impl: str, platform: str | None, group_size: int) -> tuple[str, str | None]:
  """``(path, kernel platform)``: path is ``"xla"`` or ``"pallas"``; the platform names the kernel.

  ``platform=None`` means the default backend's kernel ("tpu" on TPU, "gpu" on GPU; on a CPU host,
  where only interpret mode runs kernels, the TPU kernel).
  """
  if platform is not None and platform not in PLATFORMS:
    raise ValueError(f"platform must be None or one of {PLATFORMS}; got {platform!r}")
  host = _backend.backend()
  if impl == "auto":
    path = _backend.resolve_impl("auto", host)
    if path == "pallas" and host == "gpu" and not _mosaic_gpu_host():
      path = "xla"
    if group_size not in fmt.GROUP_SIZES:
      path = "xla"
  else:
    path = _backend.resolve_impl(impl, host)
  if path == "xla":
    return "xla", None
  if platform is None:
    platform = host if host in PLATFORMS else "tpu"
  return "pallas", platform


def _mosaic_gpu_host() -> bool:
  """A GPU of compute capability >= 9.0: one of the Mosaic GPU kernels may serve a call."""
  cap = _backend.gpu_capability()
  return cap is not None and cap >= blocks.LUT_MIN_CAPABILITY


def gpu_config(
  m: int,
  layout: fmt.Layout,
  config: blocks.BlockConfig | None,
  interpret: bool,
  x_dtype,
  mixed: bool = False,
) -> blocks.BlockConfig | None:
  """The GPU kernel of a call, as its clamped config (the module docstring's rules): the variant
  names the kernel ("lut", "wgmma", or a Triton variant when ``config`` asks for one). None: no
  default kernel for this GPU."""
  f32 = jnp.dtype(x_dtype) == jnp.float32
  if config is not None:
    if config.variant == "lut":
      return blocks.lut_config(layout.n, layout.k_pad, config)
    if config.variant == "wgmma":
      return blocks.wgmma_config(m, layout.k_pad, config, f32_activations=f32, mixed=mixed)
    return None  # a Triton variant: clamped by blocks.pick_config
  cap = _backend.gpu_capability()
  if not interpret and blocks.lut_eligible(m, layout.n, cap):
    return blocks.lut_config(layout.n, layout.k_pad)
  if interpret or blocks.wgmma_capable(cap):
    return blocks.wgmma_config(m, layout.k_pad, f32_activations=f32, mixed=mixed)
  return None


@dataclasses.dataclass(frozen=True)
class _Static:
  """Everything static about one kernel call (hashable: a custom_vjp nondiff argument)."""

  layout: fmt.Layout
  platform: str
  config: blocks.BlockConfig
  mixed: bool
  interpret: bool
  out_dtype: str


def _pad_n(a, n_pad):
  if a is None or a.shape[-1] == n_pad:
    return a
  return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, n_pad - a.shape[-1])])


def _forward(st: _Static, x2, planes, alpha, beta, prec):
  """Pads, builds the metadata vector, runs the kernel and slices back: ``(M, N)``."""
  lay, cfg = st.layout, st.config
  m, n = x2.shape[0], lay.n
  if cfg.variant == "lut":
    return _forward_lut(st, x2, planes, alpha, beta, prec)
  if cfg.variant == "wgmma":
    return _forward_wgmma(st, x2, planes, alpha, beta, prec)
  if st.platform == "tpu" and x2.dtype == jnp.float16:
    x2 = x2.astype(jnp.float32)  # TPU has no float16 (exact conversion)
  mp = _backend.round_up(m, cfg.bm)
  n_pad = _backend.round_up(blocks.padded_n(st.platform, n), cfg.bn)
  xp = jnp.pad(x2, ((0, mp - m), (0, lay.k_pad - lay.k)))
  planes, alpha, beta = _pad_n(planes, n_pad), _pad_n(alpha, n_pad), _pad_n(beta, n_pad)
  meta, prec_rows = _meta(st, prec, mp)
  extra = () if prec_rows is None else (prec_rows[:, None],)
  out_dtype = jnp.dtype(st.out_dtype)
  if st.platform == "tpu" and out_dtype == jnp.float16:
    out_dtype = jnp.dtype(jnp.float32)  # a float16 output block does not compile (see the top)
  common = dict(
    precisions=lay.precisions,
    group_size=lay.group_size,
    variant=cfg.variant,
    bm=cfg.bm,
    bn=cfg.bn,
    out_dtype=out_dtype,
    interpret=st.interpret,
  )
  if st.platform == "tpu":
    if cfg.variant == "partials":  # the kernel unpacks two weights per op, in pair order
      xp = fmt.pair_order(xp)
    y = kernel_tpu.bitplane_matmul_tpu(
      xp,
      planes,
      alpha,
      beta,
      meta,
      *extra,
      bk=cfg.bk,
      vmem_limit_bytes=cfg.vmem_limit_bytes,
      m_real=m,
      **common,
    )
  else:
    y = kernel_gpu.bitplane_matmul_gpu(
      xp,
      planes,
      alpha,
      beta,
      meta,
      *extra,
      split_k=cfg.split_k,
      num_warps=cfg.num_warps,
      num_stages=cfg.num_stages,
      **common,
    )
    if y.ndim == 3:  # split-K partial sums (f32)
      y = jnp.sum(y, axis=0)
  return y[:m, :n].astype(st.out_dtype)


def _meta(st: _Static, prec, mp: int):
  """``(meta, prec_rows)`` of the Triton and wgmma kernels: int32 ``(4,)`` ``[p, offset(p),
  index(p), 0]`` and None, or for per-row precisions ``[max valid p, 0, 0, 0]`` and int32 ``(mp,)``
  rows (0 for an invalid precision and for padding rows: no planes)."""
  lay = st.layout
  table = jnp.asarray(lay.precisions, jnp.int32)
  idx, valid = reference.precision_index(prec, lay.precisions)
  if st.mixed:
    p_max = jnp.max(jnp.where(valid, prec, table[0]))
    meta = jnp.stack([p_max, 0, 0, 0]).astype(jnp.int32)
    rows = jnp.pad(jnp.where(valid, prec, 0), (0, mp - prec.shape[0])).astype(jnp.int32)
    return meta, rows
  offsets = jnp.asarray(lay.offsets, jnp.int32)
  return jnp.stack([table[idx], offsets[idx], idx, 0]).astype(jnp.int32), None


def _forward_wgmma(st: _Static, x2, planes, alpha, beta, prec):
  """The Mosaic GPU wgmma kernel (Hopper): x as one bf16 / f16 term, or f32 x split into three
  bf16 terms (small first; exact, ``_dots.split_bf16``); split-K partials summed here."""
  lay, cfg = st.layout, st.config
  m, n = x2.shape[0], lay.n
  mp = _backend.round_up(m, cfg.bm)
  n_pad = _backend.round_up(n, kernel_wgmma.BN)
  if jnp.dtype(x2.dtype) not in kernel_wgmma.X_DTYPES:
    x2 = x2.astype(jnp.float32)
  xp = jnp.pad(x2, ((0, mp - m), (0, lay.k_pad - lay.k)))
  xs = jnp.stack(_dots.split_bf16(xp)[::-1]) if xp.dtype == jnp.float32 else xp[None]
  planes, alpha, beta = _pad_n(planes, n_pad), _pad_n(alpha, n_pad), _pad_n(beta, n_pad)
  meta, prec_rows = _meta(st, prec, mp)
  y = kernel_wgmma.bitplane_matmul_wgmma(
    xs,
    planes,
    alpha,
    beta,
    meta,
    prec_rows,
    precisions=lay.precisions,
    group_size=lay.group_size,
    bm=cfg.bm,
    split_k=cfg.split_k,
    interpret=st.interpret,
  )
  y = y[0] if y.shape[0] == 1 else jnp.sum(y, axis=0)
  return y[:m, :n].astype(st.out_dtype)


def _lut_meta(st: _Static, prec, m):
  """int32 (m, 4) rows ``[p_m, offset(p_m), index(p_m), 0]``; p_m = 0 for an invalid precision."""
  lay = st.layout
  idx, valid = reference.precision_index(prec, lay.precisions)
  offsets = jnp.asarray(lay.offsets, jnp.int32)
  rows = jnp.stack([jnp.where(valid, prec, 0), offsets[idx], idx, jnp.zeros_like(idx)], axis=-1)
  return jnp.broadcast_to(rows.astype(jnp.int32), (m, 4))


def _forward_lut(st: _Static, x2, planes, alpha, beta, prec):
  """The Mosaic GPU lookup-table GEMV (Hopper+): x widened to f32 once, per-row precisions,
  f32 split-K partials summed here."""
  lay, cfg = st.layout, st.config
  m = x2.shape[0]
  xf = jnp.pad(x2.astype(jnp.float32), ((0, 0), (0, lay.k_pad - lay.k)))
  g = lay.group_size
  xsum = jnp.sum(xf.reshape(m, lay.k_pad // g, g), axis=-1)
  y = kernel_mgpu.bitplane_matmul_lut(
    xf,
    planes,
    alpha,
    beta,
    _lut_meta(st, prec, m),
    xsum,
    group_size=g,
    cols_per_thread=cfg.bn // kernel_mgpu.THREADS,
    tiles=cfg.bk // fmt.TILE,
  )
  return jnp.sum(y, axis=0)[:, : lay.n].astype(st.out_dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _kernel_op(st, x2, planes, alpha, beta, prec):
  return _forward(st, x2, planes, alpha, beta, prec)


def _kernel_op_fwd(st, x2, planes, alpha, beta, prec):
  return _forward(st, x2, planes, alpha, beta, prec), (x2, planes, alpha, beta, prec)


def _float0_like(a):
  return np.zeros(a.shape, dtype=jax.dtypes.float0)


def _kernel_op_bwd(st, res, dy):
  x2, planes, alpha, beta, prec = res
  dx, dalpha, dbeta = reference.bitplane_matmul_backward(
    x2, planes, alpha, beta, prec, dy, layout=st.layout
  )
  return dx, _float0_like(planes), dalpha, dbeta, _float0_like(prec)


_kernel_op.defvjp(_kernel_op_fwd, _kernel_op_bwd)


def _self_check(st: _Static, m: int, x_dtype, alpha_dtype, beta_dtype) -> tuple[float, float]:
  """The forward kernel of ``st`` against ``reference.bitplane_matmul_reference`` on a random
  layer of ``st``'s layout and ``m`` random rows (the smallest and the largest stored precision;
  per-row precisions cycling through them for the mixed variant): ``(max |error| / max |y_ref|,
  tolerance)``. The backward is the reference's own. Run eagerly by ``_selfcheck.trusted``."""
  lay = st.layout
  g, words = lay.group_size, lay.k_pad // fmt.BITS
  kp_, ka, kb, kx = jax.random.split(jax.random.PRNGKey(20260), 4)
  planes = jax.random.bits(kp_, (lay.num_planes, words, lay.n), jnp.uint32)
  planes = jnp.where(jnp.arange(words)[None, :, None] < lay.k // fmt.BITS, planes, 0)
  groups = jnp.arange(lay.k_pad // g)[None, :, None] < lay.k // g
  decay = jnp.asarray(np.concatenate([0.5 ** np.arange(p) for p in lay.precisions]), jnp.float32)
  alpha = 0.05 * jax.random.uniform(
    ka, (sum(lay.precisions), lay.k_pad // g, lay.n), minval=0.5, maxval=1.5
  )
  alpha = jnp.where(groups, alpha * decay[:, None, None], 0.0).astype(alpha_dtype)
  beta = None
  if lay.has_beta:
    beta = 0.01 * jax.random.normal(kb, (len(lay.precisions), lay.k_pad // g, lay.n))
    beta = jnp.where(groups, beta, 0.0).astype(beta_dtype)
  x = jax.random.normal(kx, (m, lay.k)).astype(x_dtype)
  table = lay.precisions
  if st.mixed:
    precs = [jnp.asarray([table[i % len(table)] for i in range(m)], jnp.int32)]
  else:
    precs = [jnp.int32(p) for p in sorted({min(table), max(table)})]
  kern = jax.jit(functools.partial(_forward, st))
  ref = jax.jit(
    functools.partial(
      reference.bitplane_matmul_reference,
      precisions=table,
      group_size=g,
      out_dtype=jnp.float32,
    )
  )
  err = 0.0
  for prec in precs:
    y = kern(x, planes, alpha, beta, prec).astype(jnp.float32)
    y_ref = ref(x, planes, alpha, beta, prec)
    scale = jnp.maximum(jnp.max(jnp.abs(y_ref)), 1e-30)
    err = max(err, float(jnp.max(jnp.abs(y - y_ref)) / scale))
  low = min(jnp.dtype(x_dtype).itemsize, jnp.dtype(st.out_dtype).itemsize) < 4
  return err, (5e-2 if low else 1e-2)


def bitplane_matmul(
  x,
  planes,
  alpha,
  beta,
  precision,
  *,
  precisions=None,
  group_size=None,
  impl: str = "auto",
  interpret: bool | None = False,
  platform: str | None = None,
  config: blocks.BlockConfig | None = None,
  out_dtype=None,
) -> jax.Array:
  """``y = x @ W^(p)`` on AnyBCQ shared bit-planes (Park et al., ICLR 2026).

  Args:
    x: ``(..., K)`` activations (f32, bf16 or fp16). K % 32 == 0, K % g == 0 and
      ``round_up(K, 256) == K_pad``; padded inputs are zero.
    planes: uint32 ``(NB, K_pad/32, N)`` from ``format.pack_planes`` / ``from_reference_layout``.
    alpha: ``(S, K_pad/g, N)`` scales, row ``offset(p) + b`` = alpha^(p)_b (any float dtype;
      multiplied in f32).
    beta: ``(|P|, K_pad/g, N)`` offsets (asymmetric BCQ) or None (symmetric).
    precision: an int scalar in ``precisions``, or an int array of shape ``x.shape[:-1]`` giving
      each row its own precision (a mixed-precision batch sharing the plane partials). Concrete
      values are range-checked; traced values outside ``precisions`` give NaN rows.
    precisions: the stored precisions P (default: the contiguous range ``(p_L, ..., NB)`` that
      fills alpha's S rows, e.g. (2, 3, 4) for S = 9, NB = 4).
    group_size: g (default ``K_pad / alpha.shape[1]``); the kernels take 64, 128 or 256.
    impl: ``"auto"``, ``"xla"`` or ``"pallas"`` (see the module docstring).
    interpret: run the Pallas kernel in interpret mode (CPU tests); None = interpret on CPU only.
    platform: which kernel ``"tpu"`` or ``"gpu"`` (default: the backend's; on CPU, "tpu"). Set it
      explicitly to interpret or cross-lower the other backend's kernel.
    config: a ``blocks.BlockConfig`` to use instead of the table row (clamped to the problem). On
      GPU its variant picks the kernel: ``"wgmma"`` / ``"lut"`` (Mosaic GPU), ``"partials"`` /
      ``"dequant"`` (the deprecated Triton kernel, only ever run when named here).
    out_dtype: output dtype (default ``x.dtype``); accumulation is always f32.
  Returns:
    ``x.shape[:-1] + (N,)`` in ``out_dtype``.
  Raises:
    ValueError: wrong shapes or dtypes (K % 32, K % g, planes not uint32, alpha/beta shapes) or a
      concrete precision outside ``precisions``; each message names the argument. Also
      ``impl="pallas"`` on a GPU with no default kernel for the call (see the module docstring).
  """
  layout = fmt.check_operands(x, planes, alpha, beta, precisions=precisions, group_size=group_size)
  prec = fmt.check_precision(precision, layout.precisions, x.shape[:-1])
  out_dtype = jnp.dtype(x.dtype if out_dtype is None else out_dtype)
  path, plat = resolve_path(impl, platform, layout.group_size)

  def xla_reference():
    return reference.bitplane_matmul_reference(
      x,
      planes,
      alpha,
      beta,
      prec,
      precisions=layout.precisions,
      group_size=layout.group_size,
      out_dtype=out_dtype,
    )

  if path == "xla":
    _log_once(("xla",), "bitplane_matmul: XLA reference path (dequantize + matmul)")
    return xla_reference()

  batch = x.shape[:-1]
  x2 = x.reshape(-1, layout.k)
  if x2.shape[0] == 0:
    return jnp.zeros((*batch, layout.n), out_dtype)
  mixed = prec.ndim > 0
  prec2 = prec.reshape(-1) if mixed else prec
  # Row multiple on TPU follows the narrowest of the kernel's activation and output dtypes (on
  # TPU float16 is widened to f32 for both).
  tpu16 = lambda dt: 4 if (plat == "tpu" and dt == jnp.float16) else jnp.dtype(dt).itemsize
  itemsize = min(tpu16(x.dtype), tpu16(out_dtype))
  interpret = _backend.resolve_interpret(interpret)
  if config is not None and config.variant in ("lut", "wgmma") and plat != "gpu":
    raise ValueError(f"config variant {config.variant!r} is a Mosaic GPU kernel: platform='gpu'")
  cfg = None
  if plat == "gpu":
    cfg = gpu_config(x2.shape[0], layout, config, interpret, x.dtype, mixed)
    if cfg is None and config is None:
      why = (
        f"no default Pallas GPU kernel for compute capability {_backend.gpu_capability()}: the "
        "Mosaic GPU wgmma kernel needs Hopper (9.x), the LUT kernel Hopper or newer and at most "
        f"{blocks.LUT_MAX_M} rows with N % 128 == 0"
      )
      if impl == "auto":
        _log_once(("xla", "gpu"), f"bitplane_matmul: XLA reference path ({why})")
        return xla_reference()
      raise ValueError(
        f"{why}; pass impl='xla', or config=BlockConfig('partials' | 'dequant', ...) for the "
        "deprecated Triton kernel"
      )
  if cfg is None:  # TPU, or an explicit Triton config
    cfg = blocks.pick_config(
      plat,
      x2.shape[0],
      layout.k_pad,
      layout.n,
      layout.group_size,
      itemsize,
      mixed=mixed,
      base=config,
      f32_activations=x.dtype == jnp.float32,
    )
  if cfg.variant == "lut" and (plat != "gpu" or interpret):
    raise ValueError(
      "the LUT kernel (config variant 'lut') is a compiled Mosaic GPU kernel: it needs "
      "platform='gpu' and interpret=False (kernel_mgpu.emulate is its CPU oracle)"
    )
  st = _Static(layout, plat, cfg, mixed, interpret, out_dtype.name)
  kernel = plat
  if plat == "gpu":
    kernel = {"lut": "Mosaic GPU LUT", "wgmma": "Mosaic GPU wgmma"}.get(cfg.variant, "Triton")
  _log_once(
    ("pallas", plat, cfg, mixed, interpret),
    f"bitplane_matmul: Pallas {kernel} kernel, {'mixed' if mixed else cfg.variant} variant, "
    f"{cfg}{' (interpret mode)' if interpret else ''}",
  )
  beta_dtype = None if beta is None else jnp.dtype(beta.dtype)
  if not _selfcheck.trusted(
    "bitplane_matmul",
    f"{plat} {'mixed' if mixed else cfg.variant} bm={cfg.bm} bn={cfg.bn} bk={cfg.bk} "
    f"x={jnp.dtype(x.dtype).name} out={out_dtype.name}{' interpret' if interpret else ''}",
    (st, jnp.dtype(x.dtype).name, jnp.dtype(alpha.dtype).name, str(beta_dtype)),
    functools.partial(
      _self_check, st, min(x2.shape[0], 64), x.dtype, alpha.dtype, beta_dtype or jnp.float32
    ),
    platform=plat,
    interpret=interpret,
    package="bitplane_matmul",
  ):
    return xla_reference()
  y = _kernel_op(st, x2, planes, alpha, beta, prec2)
  y = reference.nan_invalid(y, prec2, layout.precisions)
  return y.reshape(*batch, layout.n)

"""Backend detection, ``impl``/``interpret`` resolution and padding helpers for the kernels.

Imports only JAX (and NumPy through it). Nothing here touches a device at import time.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp

IMPLS = ("auto", "xla", "pallas")


def backend() -> str:
  """``"cpu"``, ``"gpu"`` or ``"tpu"`` (the default backend's platform)."""
  return jax.default_backend()


def resolve_impl(impl: str, platform: str | None = None) -> str:
  """Maps ``"auto"`` to ``"pallas"`` on GPU/TPU and ``"xla"`` elsewhere.

  Raises:
    ValueError: ``impl`` is not one of ``auto``, ``xla``, ``pallas``.
  """
  if impl not in IMPLS:
    raise ValueError(f"impl must be one of {IMPLS}; got {impl!r}")
  if impl != "auto":
    return impl
  platform = platform or backend()
  return "pallas" if platform in ("gpu", "tpu") else "xla"


def triton_capable() -> bool:
  """True on a CUDA device of compute capability >= 8.0 (the floor of Pallas's Triton backend)."""
  try:
    cc = getattr(jax.devices()[0], "compute_capability", None)
    return cc is not None and float(cc) >= 8.0
  except (RuntimeError, ValueError, TypeError):
    return False


def gpu_capability() -> float | None:
  """Compute capability of the GPU that kernels are built for, or None when there is none.

  ``jax.default_device`` when it is set to a GPU device (a compile-only device from
  ``jax.experimental.topologies`` included: this is how a CPU host compiles for an H200), else
  the default backend's first device when that backend is a GPU. Hopper is 9.0.
  """
  dev = jax.config.jax_default_device
  if dev is None or isinstance(dev, str) or getattr(dev, "platform", None) != "gpu":
    if backend() != "gpu":
      return None
    try:
      dev = jax.devices()[0]
    except RuntimeError:
      return None
  try:
    cc = getattr(dev, "compute_capability", None)
    return None if cc is None else float(cc)
  except (ValueError, TypeError):
    return None


def resolve_interpret(interpret: bool | None, platform: str | None = None) -> bool:
  """``None`` means: interpret on CPU (no Pallas backend there), compile on GPU/TPU."""
  if interpret is not None:
    return bool(interpret)
  return (platform or backend()) not in ("gpu", "tpu")


def round_up(n: int, multiple: int) -> int:
  """Smallest multiple of ``multiple`` that is >= ``n`` (``multiple`` > 0)."""
  if multiple <= 0:
    raise ValueError(f"multiple must be positive; got {multiple}")
  return -(-n // multiple) * multiple


def pad_axes(x: jax.Array, multiples: Sequence[int | None], value=0) -> jax.Array:
  """Pads each axis of ``x`` at the end up to a multiple (None = leave the axis alone).

  Args:
    x: array of rank ``len(multiples)``.
    multiples: per-axis block multiple or None.
    value: the fill value.
  Returns:
    the padded array; slice back with ``x_padded[tuple(slice(0, n) for n in x.shape)]``.
  """
  if len(multiples) != x.ndim:
    raise ValueError(f"pad_axes: got {len(multiples)} multiples for an array of rank {x.ndim}")
  pads = [(0, 0 if m is None else round_up(n, m) - n) for n, m in zip(x.shape, multiples)]
  if not any(p for _, p in pads):
    return x
  return jnp.pad(x, pads, constant_values=value)


def unpad(x: jax.Array, shape: Sequence[int]) -> jax.Array:
  """Slices a padded array back to ``shape`` (leading corner)."""
  return x[tuple(slice(0, n) for n in shape)]


def mgpu_kernel_kwargs(**kwargs) -> dict:
  """``kwargs`` less those the installed ``plgpu.kernel`` does not take (``cost_estimate`` exists
  from jax 0.12; on 0.11 an unknown keyword would reach the mesh and raise ``TypeError``)."""
  import inspect

  from jax.experimental.pallas import mosaic_gpu as plgpu

  params = inspect.signature(plgpu.kernel).parameters
  return {k: v for k, v in kwargs.items() if k in params}


def mgpu_read_only_ref():
  """``plgpu.RefType(write=False)`` where the installed jax has it (0.12, whose ``inline_mgpu``
  refuses a writable input ref passed as an array), else ``plgpu.RefType()`` (0.11)."""
  import inspect

  from jax.experimental.pallas import mosaic_gpu as plgpu

  if "write" in inspect.signature(plgpu.RefType).parameters:
    return plgpu.RefType(write=False)
  return plgpu.RefType()

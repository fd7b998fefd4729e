"""Meshes and shardings from the config; global batches from process-local data; replicated
device data and the batch layout inside the jitted step (``replicate``, ``constrain_batch``; for
rows a step draws itself, ``rows_mesh`` / ``shard_rows`` / ``gather_rows``).

Nothing here touches a device at import time.
"""

from __future__ import annotations

from typing import Any, Mapping

from absl import logging
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DATA = "data"


def resolve_mesh_shape(axes: Mapping[str, int], num_devices: int) -> dict[str, int]:
  """Resolves a ``-1`` size to the remaining devices and checks the product.

  Args:
    axes: ordered ``{name: size}``; at most one size is -1.
    num_devices: total device count.
  Returns:
    ordered ``{name: size}``; with a -1 the product is ``num_devices``, without one it may be
    smaller (the mesh then uses the first devices: handy for 1-device references).
  """
  axes = dict(axes)
  if not axes:
    raise ValueError("mesh: need at least one axis, e.g. {'data': -1}")
  free = [k for k, v in axes.items() if v == -1]
  if len(free) > 1:
    raise ValueError(f"mesh: at most one axis may be -1; got {axes}")
  fixed = int(np.prod([v for v in axes.values() if v != -1]))
  if any(v == 0 or v < -1 for v in axes.values()):
    raise ValueError(f"mesh: sizes must be positive or -1; got {axes}")
  if free:
    if num_devices % fixed:
      raise ValueError(f"mesh: {num_devices} devices are not divisible by the fixed axes {axes}")
    axes[free[0]] = num_devices // fixed
  need = int(np.prod(list(axes.values())))
  if need > num_devices or (free and need != num_devices):
    raise ValueError(f"mesh: axes {axes} need {need} devices; there are {num_devices}")
  return axes


def make_mesh(axes: Mapping[str, int] | None = None, devices=None) -> Mesh:
  """A ``Mesh`` over ``devices`` (default: all) with the config's axes (default data=-1)."""
  devices = jax.devices() if devices is None else list(devices)
  shape = resolve_mesh_shape(axes or {DATA: -1}, len(devices))
  need = int(np.prod(list(shape.values())))
  if need < len(devices):
    if jax.process_count() > 1:
      raise ValueError(
        f"mesh: axes {shape} cover {need} of {len(devices)} devices; a "
        "multi-process mesh must use every device (use -1)"
      )
    logging.info("mesh %s uses the first %d of %d devices", shape, need, len(devices))
    devices = devices[:need]
  arr = np.asarray(devices, dtype=object).reshape(tuple(shape.values()))
  return Mesh(arr, tuple(shape.keys()))


def replicated(mesh: Mesh) -> NamedSharding:
  """Fully replicated sharding."""
  return NamedSharding(mesh, P())


def batch_sharding(mesh: Mesh, ndim: int = 1, axis: str = DATA) -> NamedSharding:
  """Leading dimension sharded over ``axis``, the rest replicated."""
  return NamedSharding(mesh, P(axis, *([None] * (ndim - 1))))


def fsdp_spec(shape: tuple[int, ...], axis_size: int, axis: str = DATA, min_size: int = 1024) -> P:
  """Shards the largest dimension divisible by ``axis_size`` (small arrays stay replicated)."""
  if int(np.prod(shape)) < min_size or axis_size == 1:
    return P()
  order = sorted(range(len(shape)), key=lambda i: -shape[i])
  for i in order:
    if shape[i] % axis_size == 0:
      spec = [None] * len(shape)
      spec[i] = axis
      return P(*spec)
  return P()


def state_shardings(
  abstract_state: Any, mesh: Mesh, mode: str = "replicated", axis: str = DATA, min_size: int = 1024
) -> Any:
  """Shardings for every array leaf of a state: replicated, or FSDP over ``axis``."""
  if mode == "replicated":
    return jax.tree.map(lambda _: replicated(mesh), abstract_state)
  if mode == "fsdp":
    size = mesh.shape[axis]
    return jax.tree.map(
      lambda x: NamedSharding(mesh, fsdp_spec(tuple(x.shape), size, axis, min_size)), abstract_state
    )
  raise ValueError(f"param_sharding must be 'replicated' or 'fsdp'; got {mode!r}")


def process_slice(
  global_size: int, process_index: int | None = None, process_count: int | None = None
) -> slice:
  """The rows of a global batch that belong to this process.

  Raises:
    ValueError: ``global_size`` is not divisible by the process count.
  """
  pi = jax.process_index() if process_index is None else process_index
  pc = jax.process_count() if process_count is None else process_count
  if global_size % pc:
    raise ValueError(f"batch_size {global_size} is not divisible by {pc} processes")
  per = global_size // pc
  return slice(pi * per, (pi + 1) * per)


def global_batch(local_batch: Any, mesh: Mesh, axis: str = DATA) -> Any:
  """Assembles a global, ``axis``-sharded array from each process's rows.

  Args:
    local_batch: pytree of host arrays, each ``(B_local, ...)``; ``B_local * process_count``
      must be divisible by the size of ``axis``.
  Returns:
    the same pytree of ``jax.Array`` of global shape ``(B_local * process_count, ...)``.
  """
  n_axis = mesh.shape[axis]

  def put(x):
    x = np.asarray(x)
    global_rows = x.shape[0] * jax.process_count()
    if global_rows % n_axis:
      raise ValueError(
        f"global batch of {global_rows} rows is not divisible by the '{axis}' axis of size {n_axis}"
      )
    return jax.make_array_from_process_local_data(batch_sharding(mesh, x.ndim, axis), x)

  return jax.tree.map(put, local_batch)


def replicate(tree: Any, mesh: Mesh) -> Any:
  """Places a pytree of host arrays on every device of ``mesh``, replicated (done once per run).

  Works with several processes: every process holds the same values (built from the config) and
  fills only its own devices (``jax.make_array_from_callback``); nothing crosses processes.
  Dtypes are canonicalised as ``jnp.asarray`` does (float64 -> float32 without ``jax_enable_x64``),
  so a device batch drawn from these arrays equals one drawn from ``jnp.asarray`` copies.

  Args:
    tree: pytree of array-likes of any shapes (numpy, ``jax.Array`` or Python scalars; not typed
      PRNG key arrays: pass raw ``uint32`` keys).
    mesh: the run's mesh.
  Returns:
    the same pytree of ``jax.Array``, each with sharding ``replicated(mesh)``.
  """
  sharding = replicated(mesh)

  def put(x):
    x = np.asarray(jax.device_get(x))
    x = x.astype(jax.dtypes.canonicalize_dtype(x.dtype), copy=False)
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

  return jax.tree.map(put, tree)


def constrain_batch(batch: Any, mesh: Mesh, axis: str = DATA) -> Any:
  """Inside ``jax.jit``: shards every leaf of a global batch over ``axis`` along its rows.

  The device-data counterpart of ``global_batch``: a batch computed inside the jitted step (from
  replicated data) gets the same layout a host batch enters with, so each device keeps (and the
  partitioner computes) only its rows.

  Args:
    batch: pytree of traced arrays, each ``(B, ...)`` with ``B`` divisible by the size of ``axis``.
  Returns:
    the same pytree, constrained to ``batch_sharding(mesh, ndim, axis)``.
  Raises:
    ValueError: a leaf is a scalar or its rows are not divisible by the axis size.
  """
  n_axis = mesh.shape[axis]

  def constrain(x):
    if x.ndim == 0 or x.shape[0] % n_axis:
      raise ValueError(
        f"a device batch leaf of shape {tuple(x.shape)} cannot be split over the "
        f"'{axis}' axis of size {n_axis} (need (B, ...) with B divisible by it)"
      )
    return jax.lax.with_sharding_constraint(x, batch_sharding(mesh, x.ndim, axis))

  return jax.tree.map(constrain, batch)


# A batch a step draws itself (PDNS, DSB) has no input sharding, so without a constraint every
# device runs the whole step: ``make_step_fn(update, mesh)`` traces ``update`` under
# ``rows_mesh(mesh)`` and the method marks its per-sample arrays with ``shard_rows``. The mesh is
# held in a ``jax.make_user_context``, not a ContextVar: its value is part of JAX's trace and jit
# cache keys, so a function traced under one mesh (or none) is never reused under another.
_ROWS_MESH = jax.make_user_context(default_value=None)


def rows_mesh(mesh: Mesh | None):
  """Context manager: ``shard_rows`` inside it (while a step is traced) splits rows over ``mesh``'s
  ``data`` axis; ``None`` switches that off. Entered by ``trainer.make_step_fn``."""
  return _ROWS_MESH(mesh)


def current_rows_mesh() -> Mesh | None:
  """The mesh of the innermost ``rows_mesh``, or None."""
  return _ROWS_MESH.value


def shard_rows(tree: Any, axis: str = DATA) -> Any:
  """Inside a jitted step under ``rows_mesh(mesh)``: shards per-sample arrays over ``axis``.

  The in-step counterpart of ``constrain_batch`` for batches a step draws itself: each leaf
  ``(B, ...)`` whose ``B`` is divisible by the size of ``axis`` gets
  ``with_sharding_constraint(x, batch_sharding(mesh, x.ndim, axis))``, so the partitioner splits
  the per-sample work over the devices (and sums the gradients with an all-reduce).

  It is the identity (the same traced value, nothing added to the program, so results stay
  bitwise equal) when: no ``rows_mesh`` is active or it holds None; the mesh has no ``axis`` or
  its size is 1; the leaf is a scalar or its leading dimension is not divisible by the axis size
  (such a leaf stays replicated); the leaf is not a ``jax.Array`` (numpy constants); outside a
  trace (a concrete array is left where it is).

  Args:
    tree: pytree of arrays, per-sample along the leading dimension.
  Returns:
    the same pytree, leaves constrained as above.
  """
  mesh = _ROWS_MESH.value
  if mesh is None or axis not in mesh.shape or mesh.shape[axis] == 1:
    return tree
  n_axis = mesh.shape[axis]

  def constrain(x):
    if not isinstance(x, jax.core.Tracer) or x.ndim == 0 or x.shape[0] % n_axis:
      return x
    return jax.lax.with_sharding_constraint(x, batch_sharding(mesh, x.ndim, axis))

  return jax.tree.map(constrain, tree)


def rows_split(rows: int, axis: str = DATA) -> int:
  """Over how many devices ``shard_rows`` splits ``rows`` rows here: the size of ``axis`` under
  ``rows_mesh`` when it divides ``rows``, else 1 (e.g. to bound per-device chunks)."""
  mesh = _ROWS_MESH.value
  if mesh is None or axis not in mesh.shape or rows % mesh.shape[axis]:
    return 1
  return int(mesh.shape[axis])


def gather_rows(tree: Any) -> Any:
  """Inside a jitted step under ``rows_mesh(mesh)``: every array leaf replicated over the mesh.

  For stage-level computations over a whole set of rows that ``shard_rows`` split (e.g. PDNS's
  step-size bisection and weight normalisation over its stage buffer): one all-gather of the
  rows, then every device computes the rest itself, instead of a collective per reduction. The
  identity under the same conditions as ``shard_rows`` (no mesh, a ``data`` axis of size 1, not
  traced).
  """
  mesh = _ROWS_MESH.value
  if mesh is None or mesh.devices.size == 1:
    return tree

  def constrain(x):
    if not isinstance(x, jax.core.Tracer):
      return x
    return jax.lax.with_sharding_constraint(x, replicated(mesh))

  return jax.tree.map(constrain, tree)

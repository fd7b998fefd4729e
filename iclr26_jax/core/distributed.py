"""Multi-process initialisation: ``jax.distributed.initialize`` only when asked.

A job is multi-host when ``--multihost`` is passed or ``ICLR26_MULTIHOST=1`` is set. On TPU pods
and SLURM/Open MPI clusters JAX discovers the coordinator itself, so the same command runs on
every host. Elsewhere (and in the localhost rehearsal) the coordinator comes from the
environment:

  ICLR26_COORDINATOR=host:port  ICLR26_NUM_PROCESSES=N  ICLR26_PROCESS_ID=i
  ICLR26_LOCAL_DEVICES=k        (optional: number of CPU devices per process, for rehearsals)

Must run before anything touches a device.
"""

from __future__ import annotations

import os

from absl import logging
import jax

_INITIALIZED = False


def _env_flag(name: str) -> bool:
  return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def multihost_requested(flag: bool | None = None) -> bool:
  """True when the flag or ``ICLR26_MULTIHOST`` asks for ``jax.distributed``."""
  return bool(flag) or _env_flag("ICLR26_MULTIHOST")


def maybe_initialize(multihost: bool | None = None) -> bool:
  """Initialises ``jax.distributed`` when requested; returns whether it did.

  Idempotent. Logs the process index, process count and device counts.
  """
  global _INITIALIZED
  if not multihost_requested(multihost):
    return False
  if _INITIALIZED:
    return True
  kwargs = {}
  if "ICLR26_COORDINATOR" in os.environ:
    kwargs["coordinator_address"] = os.environ["ICLR26_COORDINATOR"]
    try:
      kwargs["num_processes"] = int(os.environ["ICLR26_NUM_PROCESSES"])
      kwargs["process_id"] = int(os.environ["ICLR26_PROCESS_ID"])
    except KeyError as e:
      raise ValueError(
        f"ICLR26_COORDINATOR is set but {e.args[0]} is not; set ICLR26_NUM_PROCESSES and "
        "ICLR26_PROCESS_ID too (or unset all three on a TPU pod / SLURM cluster)"
      ) from None
  if "ICLR26_LOCAL_DEVICES" in os.environ:
    # CPU rehearsal: k CPU devices per process, collectives over gloo.
    jax.config.update("jax_num_cpu_devices", int(os.environ["ICLR26_LOCAL_DEVICES"]))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(**kwargs)
  _INITIALIZED = True
  logging.info(
    "jax.distributed: process %d of %d, %d local / %d global devices",
    jax.process_index(),
    jax.process_count(),
    jax.local_device_count(),
    jax.device_count(),
  )
  return True


def is_primary() -> bool:
  """True on process 0 (the one that writes logs and reports)."""
  return jax.process_index() == 0

"""Chunked fits: ``scan_in_chunks`` (a ``lax.scan`` over many steps, run as short jitted chunks)
and ``run_chunks``, the loop under it that calls any compiled chunk of steps repeatedly.

A fit written as one jitted ``lax.scan`` of all its steps cannot be stopped: Python sees Ctrl-C
only when the compiled call returns, and a NaN is found only at the end. Run in chunks of
``chunk`` steps (one compile: the last chunk is padded with inactive steps that leave the carry
as it is), the same fit returns control to Python between chunks, so ``KeyboardInterrupt`` lands
within one chunk's time, a non-finite loss stops it with the step range named, and progress can
be reported. The steps and their order are those of the single scan. The library's fits
(``minpv.fit_log_ratio``, the DSB solvers, ``qam.train_offline``) run on it; the trainer
(``core.trainer``) keeps a loop of single steps, because its checkpoints, hooks and the
multi-process preemption protocol act at every step and its batches come from the host.

Examples:
  >>> import jax, jax.numpy as jnp
  >>> def step(w, k):
  ...   g = 2.0 * (w - 3.0) + 0.0 * jax.random.normal(k)
  ...   w = w - 0.1 * g
  ...   return w, (w - 3.0) ** 2
  >>> w, losses = scan_in_chunks(step, jnp.float32(0.0), jax.random.split(jax.random.key(0), 50),
  ...                            chunk=16)
  >>> losses.shape, round(float(w), 3)
  ((50,), 3.0)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np


class NonFiniteLossError(FloatingPointError):
  """A fit's loss became NaN or infinite; the message names the first bad step."""


def scan_in_chunks(
  step: Callable[[Any, Any], tuple[Any, jax.Array]],
  carry: Any,
  xs: Any,
  *,
  chunk: int = 100,
  name: str = "fit",
  check_finite: bool = True,
  on_chunk: Callable[[int, np.ndarray], None] | None = None,
) -> tuple[Any, np.ndarray]:
  """``jax.lax.scan(step, carry, xs)`` in jitted chunks; returns ``(carry, losses)``.

  Args:
    step: ``(carry, x) -> (carry, loss)`` with a scalar ``loss`` (one step of the fit).
    carry: the initial carry (a pytree of arrays).
    xs: a pytree whose leaves have a leading axis of length ``n`` (the steps), e.g. keys (n, ...).
    chunk: steps per compiled call (>= 1); control returns to Python between chunks.
    name: what the error messages call the fit.
    check_finite: raise ``NonFiniteLossError`` at the first chunk whose loss is NaN / inf.
    on_chunk: called as ``on_chunk(steps_done, losses_so_far)`` after each chunk (progress).
  Returns:
    the final carry and the losses, numpy ``(n,)``.
  Raises:
    ValueError: ``chunk`` < 1, no steps, or leaves of ``xs`` with different leading lengths.
    NonFiniteLossError: the loss is not finite (names the first bad step, 1-based, of ``n``).
    KeyboardInterrupt: Ctrl-C, within one chunk's time.
  """
  if int(chunk) < 1:
    raise ValueError(f"chunk must be >= 1; got {chunk}")
  lengths = {int(leaf.shape[0]) for leaf in jax.tree.leaves(xs)}
  if len(lengths) != 1:
    raise ValueError(f"xs leaves must share their leading (step) axis; got lengths {lengths}")
  (n,) = lengths
  if n < 1:
    raise ValueError(f"{name}: xs has no steps (leading axis of length 0)")
  size = min(int(chunk), n)
  runner = _chunk_runner(step)

  def one_chunk(carry, c):
    start, stop = c * size, min((c + 1) * size, n)
    part = jax.tree.map(lambda a: _pad_to(a[start:stop], size), xs)
    carry, out = runner(carry, part, jnp.arange(size) < (stop - start))
    return carry, {"loss": out[: stop - start]}

  so_far = []

  def report(done, info):
    so_far.append(info["loss"])
    on_chunk(done, np.concatenate(so_far))

  carry, traces = run_chunks(
    one_chunk,
    carry,
    -(-n // size),
    steps_per_chunk=size,
    num_steps=n,
    name=name,
    loss_key="loss" if check_finite else None,
    on_chunk=None if on_chunk is None else report,
  )
  return carry, traces["loss"]


def run_chunks(
  chunk_fn: Callable[[Any, int], tuple[Any, dict]],
  state: Any,
  num_chunks: int,
  *,
  steps_per_chunk: int,
  num_steps: int | None = None,
  name: str = "fit",
  loss_key: str | Sequence[str] | None = "train/loss",
  on_chunk: Callable[[int, dict], None] | None = None,
  keep_traces: bool = True,
) -> tuple[Any, dict[str, np.ndarray]]:
  """Calls a compiled chunk of steps ``num_chunks`` times; returns ``(state, traces)``.

  The loop under every chunked fit of the package (``scan_in_chunks`` and the DSB solvers):
  control returns to Python after each chunk, so Ctrl-C lands within one chunk's time, a
  non-finite loss stops the fit naming its first bad step, and progress can be reported.

  Args:
    chunk_fn: ``(state, chunk_index) -> (state, info)``; ``info`` maps names to per-step arrays
      ``(steps,)`` (``steps_per_chunk``, fewer in a last partial chunk).
    state: the initial state (a pytree).
    num_chunks: number of calls (>= 1).
    steps_per_chunk: steps per full chunk (to name the step in errors).
    num_steps: total steps, for the error message (default ``num_chunks * steps_per_chunk``).
    name: what the error message calls the fit.
    loss_key: the ``info`` entry checked for NaN / inf after each chunk; a sequence of entries, or
      ``"*"`` for every entry (the error then names the entry); None: no check.
    on_chunk: called as ``on_chunk(steps_done, info)`` after each chunk, ``info`` that chunk's
      traces (numpy).
    keep_traces: False returns no traces (a long fit that logs through ``on_chunk`` instead).
  Returns:
    the final state and the traces, each entry concatenated over chunks, numpy ``(steps,)``
    (``{}`` when ``keep_traces`` is False).
  Raises:
    NonFiniteLossError: a checked trace is not finite (names the first bad step, 1-based).
    KeyboardInterrupt: Ctrl-C, within one chunk's time.
  """
  total = num_chunks * steps_per_chunk if num_steps is None else int(num_steps)
  parts: dict[str, list[np.ndarray]] = {}
  done = 0
  for c in range(int(num_chunks)):
    state, info = chunk_fn(state, c)
    info = {k: np.asarray(v) for k, v in jax.device_get(info).items()}  # Ctrl-C lands here
    keys = _checked(loss_key, info)
    bad = [
      (int(np.argmin(np.isfinite(info[k]))), k) for k in keys if not np.isfinite(info[k]).all()
    ]
    if bad:
      first, k = min(bad)
      step = c * steps_per_chunk + first + 1
      what = "the loss" if isinstance(loss_key, str) and loss_key != "*" else k
      raise NonFiniteLossError(
        f"{name}: {what} is {info[k][first]} at step {step} of {total} (finite through step "
        f"{step - 1}); lower the learning rate or check the inputs"
      )
    if keep_traces:
      for k, v in info.items():
        parts.setdefault(k, []).append(v)
    done += len(next(iter(info.values()))) if info else steps_per_chunk
    if on_chunk is not None:
      on_chunk(done, info)
  return state, {k: np.concatenate(v) for k, v in parts.items()}


def _checked(loss_key, info) -> list[str]:
  if loss_key is None:
    return []
  if loss_key == "*":
    return list(info)
  return [loss_key] if isinstance(loss_key, str) else list(loss_key)


def _pad_to(a, size):
  if a.shape[0] == size:
    return a
  pad = jnp.repeat(a[-1:], size - a.shape[0], axis=0)
  return jnp.concatenate([a, pad], axis=0)


def _chunk_runner(step):
  def masked(carry, inputs):
    x, live = inputs
    new, loss = step(carry, x)
    carry = jax.tree.map(lambda a, b: jnp.where(live, a, b), new, carry)
    return carry, loss

  return jax.jit(lambda carry, xs, active: jax.lax.scan(masked, carry, (xs, active)))

"""Hessian penalty on the non-uniform sigma grid and the two-phase training schedule of lmKAN.

lmKAN (Pozdnyakov & Schwaller, ICLR 2026; reference code github.com/schwallergroup/lmkan). The
penalty of one table function is the mean over the (G−1)² interior nodes of F_xx² + 2F_xy² + F_yy²
(finite differences on the non-uniform grid); a layer's is the sum over its P·Q functions, a model's
the sum over its layers. Its null space is exactly the affine functions. Holds
`hessian_penalty_table`, `hessian_penalty`, `hessian_operator`, the two-phase schedule
(`two_phase_schedule`: constant LR with λ decaying geometrically, then λ = 0 with a cosine LR; both
optax schedules of the traced step) and the optax pieces `add_hessian_penalty` and
`recipe_optimizer`.

The difference formulas and the recipe: docs/methods/lmkan.md ("The algorithm").
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from iclr26_jax.lmkan.grid import SigmaGrid
from iclr26_jax.core import validate

__all__ = [
  "hessian_penalty_table",
  "hessian_penalty",
  "hessian_operator",
  "find_tables",
  "TwoPhaseSchedule",
  "two_phase_schedule",
  "two_phase_schedule_from_config",
  "add_hessian_penalty",
  "recipe_optimizer",
]


def _check_table(table, grid: SigmaGrid | None, name="table"):
  if table.ndim != 4 or table.shape[1] != table.shape[2]:
    raise ValueError(f"{name} must have shape (P, G+1, G+1, Q), got {tuple(table.shape)}.")
  g = table.shape[1] - 1
  if grid is None:
    grid = SigmaGrid(g)
  elif not isinstance(grid, SigmaGrid):
    raise ValueError(f"grid must be a SigmaGrid or None, got {type(grid).__name__}.")
  if grid.G != g:
    raise ValueError(
      f"{name} of shape {tuple(table.shape)} has G = {g}, but grid has G = {grid.G}."
    )
  return grid


def hessian_penalty_table(table, grid: SigmaGrid | None = None):
  """Hessian penalty of one lmKAN table: Σ over its P·Q functions of mean_interior(F_xx² + 2F_xy² + F_yy²).

  At interior node (i, j), with hL_i = t_i − t_{i−1} and hR_i = t_{i+1} − t_i (F_yy alike along j):
  F_xx = 2/(hL_i + hR_i)·[(F_{i+1,j} − F_{i,j})/hR_i − (F_{i,j} − F_{i−1,j})/hL_i],
  F_xy = (F_{i+1,j+1} − F_{i+1,j−1} − F_{i−1,j+1} + F_{i−1,j−1}) / ((hL_i + hR_i)(hL_j + hR_j)).

  Args:
    table: (P, G+1, G+1, Q) floating.
    grid: SigmaGrid with that G (None: inferred from the table shape).
  Returns:
    scalar of the table's dtype. O(#params), independent of the batch.
  """
  table = jnp.asarray(table)
  grid = _check_table(table, grid)
  g = grid.G
  dt = table.dtype
  h = jnp.asarray(grid.widths, dt)  # (G,) true non-uniform spacings h_k = t_{k+1} − t_k
  hl, hr = h[:-1], h[1:]  # (G−1,) left/right spacings of interior nodes 1..G−1
  s = hl + hr
  # Along the first grid axis (axis 1).
  d1 = jnp.diff(table, axis=1) / h[None, :, None, None]  # (P, G, G+1, Q)
  fxx = (d1[:, 1:] - d1[:, :-1]) * (2.0 / s)[None, :, None, None]  # (P, G−1, G+1, Q)
  fxx = fxx[:, :, 1:-1]
  d2 = jnp.diff(table, axis=2) / h[None, None, :, None]  # (P, G+1, G, Q)
  fyy = (d2[:, :, 1:] - d2[:, :, :-1]) * (2.0 / s)[None, None, :, None]
  fyy = fyy[:, 1:-1]
  cross = table[:, 2:, 2:] - table[:, 2:, :-2] - table[:, :-2, 2:] + table[:, :-2, :-2]
  fxy = cross / (s[None, :, None, None] * s[None, None, :, None])
  per_node = fxx**2 + 2.0 * fxy**2 + fyy**2  # (P, G−1, G−1, Q)
  return jnp.sum(per_node) / ((g - 1) ** 2)


def find_tables(params) -> list[tuple[str, Any]]:
  """All lmKAN tables in a parameter tree: leaves named `table` of shape (P, G+1, G+1, Q).

  Args:
    params: a pytree (e.g. a Flax `params` collection, or the full variables dict).
  Returns:
    list of (path string, table).
  """
  out = []
  for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
    if not path:
      continue
    last = path[-1]
    key = getattr(last, "key", getattr(last, "name", None))
    if key == "table" and getattr(leaf, "ndim", 0) == 4 and leaf.shape[1] == leaf.shape[2]:
      out.append((jax.tree_util.keystr(path), leaf))
  return out


def hessian_penalty(params):
  """Model Hessian penalty: the sum of `hessian_penalty_table` over every lmKAN table in `params`.

  Each table's G is read from its shape, so layers of different G may be mixed.

  Args:
    params: pytree holding lmKAN tables (leaves named `table`, shape (P, G+1, G+1, Q)).
  Returns:
    scalar.
  Raises:
    ValueError if the tree holds no lmKAN table (a silent zero would disable the regulariser).
  """
  tables = find_tables(params)
  if not tables:
    raise ValueError(
      "params holds no lmKAN table (no leaf named 'table' of shape (P, G+1, G+1, Q)); "
      "pass the parameters of a model built from LMKANDense layers."
    )
  return sum(hessian_penalty_table(t) for _, t in tables)


def hessian_operator(grid: SigmaGrid) -> np.ndarray:
  """The stacked difference operator D of the penalty for one function, as a float64 matrix.

  Rows, for every interior node (i, j) in row-major order: F_xx, √2·F_xy, F_yy; columns: the flattened
  table, index i·(G+1) + j. The penalty of one function f (flattened) is ‖D f‖² / (G−1)².

  Args:
    grid: SigmaGrid with G intervals.
  Returns:
    D of shape (3·(G−1)², (G+1)²).
  """
  if not isinstance(grid, SigmaGrid):
    raise ValueError(f"grid must be a SigmaGrid, got {type(grid).__name__}.")
  g = grid.G
  g1 = g + 1
  t = grid.nodes
  rows = []
  for i in range(1, g):
    for j in range(1, g):
      hli, hri = t[i] - t[i - 1], t[i + 1] - t[i]
      hlj, hrj = t[j] - t[j - 1], t[j + 1] - t[j]
      xx = np.zeros(g1 * g1)
      xx[(i + 1) * g1 + j] += 2.0 / (hli + hri) / hri
      xx[i * g1 + j] -= 2.0 / (hli + hri) * (1.0 / hri + 1.0 / hli)
      xx[(i - 1) * g1 + j] += 2.0 / (hli + hri) / hli
      yy = np.zeros(g1 * g1)
      yy[i * g1 + j + 1] += 2.0 / (hlj + hrj) / hrj
      yy[i * g1 + j] -= 2.0 / (hlj + hrj) * (1.0 / hrj + 1.0 / hlj)
      yy[i * g1 + j - 1] += 2.0 / (hlj + hrj) / hlj
      xy = np.zeros(g1 * g1)
      c = math.sqrt(2.0) / ((hli + hri) * (hlj + hrj))
      xy[(i + 1) * g1 + j + 1] += c
      xy[(i + 1) * g1 + j - 1] -= c
      xy[(i - 1) * g1 + j + 1] -= c
      xy[(i - 1) * g1 + j - 1] += c
      rows.extend([xx, xy, yy])
  return np.stack(rows)


# -- Two-phase schedule ----------------------------------------------------------------------------


class TwoPhaseSchedule(NamedTuple):
  """The two-phase recipe.

  Attributes:
    learning_rate: optax schedule step → LR (constant in phase 1, cosine to 0 in phase 2).
    hessian_lambda: optax schedule step → λ (geometric decay in phase 1, 0 in phase 2).
    phase1_steps: S1, the first step of phase 2.
    total_steps: S.
  """

  learning_rate: Callable
  hessian_lambda: Callable
  phase1_steps: int
  total_steps: int


def two_phase_schedule(
  total_steps: int,
  phase1_fraction: float = 0.5,
  lr: float = 1e-3,
  lambda0: float = 1.0,
  lambda_decades: float = 250 / 30,
  steps_per_epoch: int | None = None,
) -> TwoPhaseSchedule:
  """LR and λ schedules of the two-phase recipe (defaults: the reference README's methane recipe).

  Phase 1 (step < S1 = round(phase1_fraction·total_steps)): LR = lr, λ = λ0·10^(−decades·step/S1)
  (continuous, or an epoch staircase when `steps_per_epoch` is given: the exponent uses
  ⌊step/steps_per_epoch⌋·steps_per_epoch). Phase 2: λ = 0, LR = cosine from lr to 0 over S − S1 steps.

  Args:
    total_steps: S ≥ 2.
    phase1_fraction: in (0, 1); S1 is clipped to [1, S−1].
    lr: peak (constant) learning rate > 0.
    lambda0: initial λ ≥ 0.
    lambda_decades: decades of λ decay over phase 1 (250/30 ≈ 8.3 in the README; 8 in the surrogate
      protocol), ≥ 0.
    steps_per_epoch: optional staircase period.
  Returns:
    TwoPhaseSchedule (both schedules accept a traced int step).

  Examples:
    >>> from iclr26_jax import lmkan
    >>> s = lmkan.two_phase_schedule(1000, lr=3e-3, lambda_decades=8.0)
    >>> s.phase1_steps
    500
    >>> [round(float(s.learning_rate(k)), 6) for k in (0, 499, 750, 1000)]  # then cosine to 0
    [0.003, 0.003, 0.0015, 0.0]
    >>> [round(float(s.hessian_lambda(k)), 8) for k in (0, 250, 499, 500)]  # 1 -> 1e-8, then 0
    [1.0, 0.0001, 1e-08, 0.0]
  """
  total_steps = validate.positive_int(total_steps, "total_steps")
  if total_steps < 2:
    raise ValueError(f"total_steps must be >= 2 (one step per phase at least), got {total_steps}.")
  if not 0.0 < float(phase1_fraction) < 1.0:
    raise ValueError(f"phase1_fraction must be in (0, 1), got {phase1_fraction!r}.")
  if not float(lr) > 0.0:
    raise ValueError(f"lr must be > 0, got {lr!r}.")
  if not float(lambda0) >= 0.0:
    raise ValueError(f"lambda0 must be >= 0, got {lambda0!r}.")
  if not float(lambda_decades) >= 0.0:
    raise ValueError(f"lambda_decades must be >= 0, got {lambda_decades!r}.")
  s1 = min(max(int(round(phase1_fraction * total_steps)), 1), total_steps - 1)
  s2 = total_steps - s1
  lr_sched = optax.join_schedules(
    [optax.constant_schedule(float(lr)), optax.cosine_decay_schedule(float(lr), decay_steps=s2)],
    boundaries=[s1],
  )
  if steps_per_epoch is None:
    decay = optax.exponential_decay(
      float(lambda0), transition_steps=s1, decay_rate=10.0 ** (-float(lambda_decades))
    )
  else:
    spe = validate.positive_int(steps_per_epoch, "steps_per_epoch")
    decay = optax.exponential_decay(
      float(lambda0),
      transition_steps=spe,
      decay_rate=10.0 ** (-float(lambda_decades) * spe / s1),
      staircase=True,
    )
  lam_sched = optax.join_schedules([decay, optax.constant_schedule(0.0)], boundaries=[s1])
  return TwoPhaseSchedule(lr_sched, lam_sched, s1, total_steps)


def two_phase_schedule_from_config(config) -> TwoPhaseSchedule:
  """`two_phase_schedule` driven by a plain dict or an ml_collections ConfigDict.

  Reads `total_steps` (or `num_steps`), and optionally `phase1_fraction`, `lr` (or `learning_rate`),
  `lambda0`, `lambda_decades`, `steps_per_epoch` (None or absent: continuous λ). Other keys are ignored,
  so a whole experiment config can be passed.

  Args:
    config: mapping-like with `.get(key, default)`.
  Returns:
    TwoPhaseSchedule.
  """
  if not hasattr(config, "get"):
    raise ValueError(f"config must be a dict or ConfigDict, got {type(config).__name__}.")
  total = config.get("total_steps", None)
  if total is None:
    total = config.get("num_steps", None)
  if total is None:
    raise ValueError("config must set `total_steps` (or `num_steps`) for the two-phase schedule.")
  lr = config.get("lr", None)
  if lr is None:
    lr = config.get("learning_rate", 1e-3)
  return two_phase_schedule(
    total_steps=total,
    phase1_fraction=config.get("phase1_fraction", 0.5),
    lr=lr,
    lambda0=config.get("lambda0", 1.0),
    lambda_decades=config.get("lambda_decades", 250 / 30),
    steps_per_epoch=config.get("steps_per_epoch", None),
  )


class _PenaltyState(NamedTuple):
  count: jax.Array  # number of updates applied so far (the step λ is read at)


def add_hessian_penalty(hessian_lambda) -> optax.GradientTransformation:
  """An optax transform adding λ(step)·∇ hessian_penalty(params) to the incoming updates.

  Chained before the optimiser (`optax.chain(add_hessian_penalty(sched), optax.adam(lr))`), it gives
  exactly the update of the optimiser on the gradient of data loss + λ·penalty, so the loss function
  stays the data loss. λ is read at the number of updates applied so far (0 for the first), as the
  trainer does; the penalty's gradient is zero on every leaf that is not an lmKAN table.

  Args:
    hessian_lambda: an optax schedule step → λ (e.g. `two_phase_schedule(...).hessian_lambda`) or a
      constant float ≥ 0.
  Returns:
    optax.GradientTransformation whose `update(updates, state, params)` needs `params` (the tree the
    updates belong to, holding the lmKAN tables).

  Examples:
    >>> import jax, jax.numpy as jnp, optax
    >>> from iclr26_jax import lmkan
    >>> params = {"table": jax.random.normal(jax.random.key(0), (2, 7, 7, 3))}
    >>> tx = lmkan.add_hessian_penalty(0.5)
    >>> upd, _ = tx.update(jax.tree.map(jnp.zeros_like, params), tx.init(params), params)
    >>> want = jax.grad(lambda p: 0.5 * lmkan.hessian_penalty(p))(params)
    >>> bool(jnp.allclose(upd["table"], want["table"]))
    True
  """
  if callable(hessian_lambda):
    schedule = hessian_lambda
  else:
    lam = float(hessian_lambda)
    if not lam >= 0.0:
      raise ValueError(
        f"hessian_lambda must be a schedule or a float >= 0, got {hessian_lambda!r}."
      )
    schedule = optax.constant_schedule(lam)

  def init(params):
    del params
    return _PenaltyState(count=jnp.zeros([], jnp.int32))

  def update(updates, state, params=None):
    if params is None:
      raise ValueError(
        "add_hessian_penalty needs params: call tx.update(grads, opt_state, params)."
      )
    lam = schedule(state.count)
    pen_grad = jax.grad(hessian_penalty)(params)
    updates = jax.tree.map(lambda u, g: u + (lam * g).astype(u.dtype), updates, pen_grad)
    return updates, _PenaltyState(count=optax.safe_int32_increment(state.count))

  return optax.GradientTransformation(init, update)


def recipe_optimizer(
  total_steps: int,
  *,
  lr: float = 1e-3,
  phase1_fraction: float = 0.5,
  lambda0: float = 1.0,
  lambda_decades: float = 250 / 30,
  steps_per_epoch: int | None = None,
  hessian: bool = True,
) -> tuple[optax.GradientTransformation, TwoPhaseSchedule]:
  """The paper's training recipe as one optax optimiser: Adam on the two-phase LR schedule, with the
  Hessian penalty's decaying λ added to the gradients (`add_hessian_penalty`).

  Defaults are the reference README's methane recipe (`two_phase_schedule`); the project's laptop
  configs use lr = 3e-3 and 8 decades. Pair it with a network that has BatchNorm before every lmKAN
  layer (`make_network` / `LMKANNet`), and pass `params` to `tx.update`.

  Args:
    total_steps: S ≥ 2, the number of updates.
    lr, phase1_fraction, lambda0, lambda_decades, steps_per_epoch: see `two_phase_schedule`.
    hessian: False drops the penalty (λ = 0 throughout; the ablation).
  Returns:
    (tx, schedule): the optax GradientTransformation and the TwoPhaseSchedule it follows (for logging
    λ and the LR).

  Examples:
    >>> import jax, jax.numpy as jnp, optax
    >>> from iclr26_jax import lmkan
    >>> tx, sched = lmkan.recipe_optimizer(100, lr=1e-2)
    >>> params = {"table": jnp.zeros((1, 5, 5, 1)).at[0, 2, 2, 0].set(1.0)}  # a bump: penalty > 0
    >>> state = tx.init(params)
    >>> for _ in range(3):  # no data loss: the penalty alone flattens the bump
    ...   upd, state = tx.update(jax.tree.map(jnp.zeros_like, params), state, params)
    ...   params = optax.apply_updates(params, upd)
    >>> round(float(params["table"][0, 2, 2, 0]), 3)  # about three Adam steps of 1e-2 downhill
    0.971
  """
  schedule = two_phase_schedule(
    total_steps, phase1_fraction, lr, lambda0, lambda_decades, steps_per_epoch
  )
  adam = optax.adam(schedule.learning_rate)
  if not hessian:
    return adam, schedule
  return optax.chain(add_hessian_penalty(schedule.hessian_lambda), adam), schedule

"""Claims the reproduce harness checks, registered per method.

Each module in this package defines ``CLAIMS``: a list of ``Claim``. A claim names the config
it runs, says how the number is measured, gives the reference value (from the paper or from
analytic ground truth) and the direction that counts as success, and has a ``run`` function
that trains/evaluates at laptop scale (``ctx.full`` selects the larger version) and returns a
``ClaimResult``. The verdict always comes from the measurement.

Why a failing claim fails (a reason class, ``budget`` with its evidence or ``open``) and what the
authors' code gave at the same budget are data, ``reasons.json`` (read by ``reasons.py``), keyed
by claim name (``Claim.reason`` reads it); they are shown beside a FAIL and never change it.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Callable


@dataclasses.dataclass
class ClaimContext:
  """What a claim's ``run`` gets: an output directory of its own, the scale and the budget.

  Attributes:
    outdir: the claim's own output directory.
    full: run the larger (``--full``) version.
    seed: the ``--seed`` flag (claims with a seed tuple of their own may ignore it).
    budget: ``--budget``: the multiple of the claim's budget to run at (1 = as registered). Read
      by claims whose ``Claim.budget`` says what it scales (their step / update counts), through
      ``steps``.
    cache_dir: a folder shared by the points of one budget curve for inputs that do not depend
      on the budget (generated data); None (a plain run): everything is made afresh in outdir.
  """

  outdir: str
  full: bool = False
  seed: int = 0
  budget: float = 1.0
  cache_dir: str | None = None

  def __post_init__(self):
    if not (self.budget > 0 and self.budget < float("inf")):
      raise ValueError(f"ClaimContext.budget must be a positive finite number; got {self.budget!r}")

  def steps(self, n: int) -> int:
    """``n`` (a step / update count of the claim at budget 1) times ``budget``, rounded, >= 1."""
    return max(1, int(round(n * self.budget)))

  def scale_steps(self, sc: dict, keys) -> dict:
    """A copy of the scale dict ``sc`` with each entry named in ``keys`` passed through ``steps``.
    Raises KeyError naming a key ``sc`` lacks (a renamed budget entry must not go unscaled)."""
    missing = [k for k in keys if k not in sc]
    if missing:
      raise KeyError(f"scale_steps: {missing} not in the claim's scale ({sorted(sc)})")
    return {**sc, **{k: self.steps(sc[k]) for k in keys}}


@dataclasses.dataclass
class ClaimResult:
  """A measured value, a few lines of detail (Markdown) and the plots written to outdir.

  ``seed_values`` (optional): ``{seed: the claim's value computed from that seed's runs alone}``,
  the seed spread a budget curve is judged against (``reasons.curve_trend``).
  """

  value: float
  details: str = ""
  plots: list[str] = dataclasses.field(default_factory=list)
  seed_values: dict | None = None


@dataclasses.dataclass
class Claim:
  """One checked statement.

  Attributes:
    name: ``method/short_name``.
    method: the method package (``--only`` filters on it).
    config: the config the claim runs (``path.py:arg``), for people who want to rerun it.
    measure: how the number is measured, in words.
    reference: the paper's value or the analytic ground truth.
    reference_source: where the reference comes from ("closed form", "paper Table 2", ...).
    direction: "higher" (value >= threshold passes) or "lower" (value <= threshold passes).
    threshold: the pass boundary (defaults to the reference).
    run: ``run(ctx) -> ClaimResult``.
    budget: what ``--budget=K`` scales in this claim, in words (e.g. "training steps of every
      run"); "" (default): the claim has no budget knob and ``--budget`` other than 1 is refused.
  """

  name: str
  method: str
  config: str
  measure: str
  reference: float
  reference_source: str
  direction: str
  run: Callable[[ClaimContext], ClaimResult]
  threshold: float | None = None
  budget: str = ""

  def __post_init__(self):
    if self.direction not in ("higher", "lower"):
      raise ValueError(f"claim {self.name}: direction must be 'higher' or 'lower'")
    if self.threshold is None:
      self.threshold = self.reference

  @property
  def reason(self):
    """The ``reasons.Reason`` recorded for this claim's failure, or None."""
    from experiments.claims import reasons

    return reasons.REASONS.get(self.name)

  def passed(self, value: float) -> bool:
    if value != value:  # NaN never passes
      return False
    return value >= self.threshold if self.direction == "higher" else value <= self.threshold


def all_claims() -> list[Claim]:
  """Every ``CLAIMS`` entry of every module in this package, in module order."""
  claims: list[Claim] = []
  for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    module = importlib.import_module(f"{__name__}.{info.name}")
    claims.extend(getattr(module, "CLAIMS", []))
  names = [c.name for c in claims]
  dup = {n for n in names if names.count(n) > 1}
  if dup:
    raise ValueError(f"duplicate claim names: {sorted(dup)}")
  return claims

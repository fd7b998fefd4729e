"""Slow known-answer ordering through the real trainer and configs: lmKAN beats a costlier MLP.

On the methane-like surrogate (1000 steps, batch 512, seeds 0 and 1), lmKAN 12→8→8→1 (G = 8,
672 FLOPs/sample) must beat by a clear margin the same-depth ReLU MLP of width 16, which costs
more (928 FLOPs/sample). First honest run (reproduce harness): lmKAN 0.537 ± 0.014,
MLP 0.752 ± 0.011 test MSE/Var; the margin below (lmKAN < 0.85 × MLP, i.e. 0.64) sits about
seven seed-stds from both. (That run used the reference noise init; with the affine default init
the laptop reproduce run at 1500 steps measured lmKAN 0.593 ± 0.006 vs MLP 0.788 ± 0.010.) The test
runs 1000 steps to keep CI short (this exact test body: lmKAN 0.619 / 0.644 vs MLP
0.817 / 0.824, threshold 0.698). With the named data and init streams the same body
measured lmKAN 0.688 / 0.619 vs MLP 0.806 / 0.842 (mean ratio 0.79, threshold 0.700):
one seed alone is not enough (seed 0's ratio is 0.854), so both seeds stay. A broken lookup,
penalty, schedule or BatchNorm placement lands lmKAN at or above the MLP.
"""

import numpy as np
import pytest

from experiments.configs.lmkan import methane
from iclr26_jax.core import trainer
from iclr26_jax.lmkan.method import LMKANMethod


def _run(tmp_path, variant, hidden, seed):
  arg = ",".join(
    x
    for x in (
      variant,
      f"seed={seed}",
      "num_steps=1000",
      "checkpoint_every=1000",
      "log_every=1000",
      f"lmkan.hidden=({hidden},{hidden})",
      "progress_bar=False",
    )
    if x
  )
  cfg = methane.get_config(arg)
  res = trainer.train(LMKANMethod(cfg), cfg, str(tmp_path / f"{variant or 'lmkan'}_{seed}"))
  return res.eval_metrics


@pytest.mark.slow
def test_small_lmkan_beats_costlier_mlp(tmp_path):
  lm = [_run(tmp_path, "", 8, s) for s in (0, 1)]
  mlp = [_run(tmp_path, "mlp", 16, s) for s in (0, 1)]
  assert lm[0]["model/flops_per_sample"] < mlp[0]["model/flops_per_sample"]
  e_lm = np.mean([m["eval/mse_over_var"] for m in lm])
  e_mlp = np.mean([m["eval/mse_over_var"] for m in mlp])
  assert e_lm < 0.85 * e_mlp, (e_lm, e_mlp)

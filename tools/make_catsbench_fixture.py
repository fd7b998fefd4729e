"""Writes tests/dsb/data/catsbench_fixture.npz: catsbench 1.4 closed forms on fixed potentials.

The reference is the published benchmark package ``catsbench`` 1.4 (torch), run ONCE offline in a
throwaway virtual environment outside the repository; the project itself never imports torch,
catsbench or this script. tests/dsb/test_dsb_catsbench_fixture.py compares our float64 values
with these to 1e-10.

Usage (from the repository root):

    python3 -m venv /tmp/cb_venv
    /tmp/cb_venv/bin/pip install torch==2.13.0     # the CPU wheel
    /tmp/cb_venv/bin/pip install catsbench==1.4    # (resolved torch 2.14.1 here)
    /tmp/cb_venv/bin/python tools/make_catsbench_fixture.py

Made with catsbench 1.4, torch 2.14.1+cpu (CPU: catsbench's lse_matmul falls back to its exact
reference reduction). Instances (no randomness: the potentials are fixed arrays written here):
``g``: gaussian reference, S = 12, alpha = 0.3, N = 3, s = 2 (catsbench's gaussian normaliser
sums one extra term k = S, exp(-4 S^2 / (alpha (S - 1))^2) ~ 1e-24 of Z here, below the
tolerance); ``u``: uniform reference, S = 12, alpha = 0.05, N = 3, s = 2. Both D = 3, K = 4,
float64, eps = 0 (catsbench's Prior adds eps to probabilities; 0 keeps the comparison exact).
Stored per instance ``<i>/``: log_alpha (K,), log_cp_cores (D, S, K), x0 (B, D) int64, the
reference's log_onestep (S, S) and log_cum (N + 2, S, S), the plan marginals
log pi^d(y | x0) (B, D, S) (``get_cum_transition_logits``, normalised), the normaliser
log c(x0) (B,), and the SB transition marginals log p^d(x_{t+1} | x_t = x0) (N + 1, B, D, S)
(``get_transition_logits`` at t = 0..N, normalised).
"""

import os

import numpy as np
import torch
from catsbench.benchmarks.hd import BenchmarkHD, BenchmarkHDConfig

OUT = os.path.join(
  os.path.dirname(os.path.abspath(__file__)), "..", "tests", "dsb", "data", "catsbench_fixture.npz"
)
D, S, K, N, SKIP, B = 3, 12, 4, 3, 2, 8
INSTANCES = {"g": ("gaussian", 0.3), "u": ("uniform", 0.05)}


def potentials():
  """Fixed arrays (a deterministic, non-random formula: no RNG parity needed)."""
  d, s, k = np.meshgrid(np.arange(D), np.arange(S), np.arange(K), indexing="ij")
  log_cp_cores = np.sin(1.3 * d + 0.7 * s * (k + 1)) * 1.5 - 0.05 * (s - 3 * k) ** 2 / (k + 1)
  log_alpha = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
  x0 = (np.arange(B)[:, None] * np.array([1, 5, 7])[None, :] + np.array([0, 2, 4])) % S
  return log_alpha, log_cp_cores, x0.astype(np.int64)


def main():
  log_alpha, log_cp_cores, x0 = potentials()
  out = {}
  for name, (prior, alpha) in INSTANCES.items():
    cfg = BenchmarkHDConfig(
      dim=D,
      input_shape=(D,),
      num_potentials=K,
      num_categories=S,
      radius=5.0,
      alpha=alpha,
      num_timesteps=N,
      num_skip_steps=SKIP,
      prior_type=prior,
      benchmark_type="gaussian",
      num_val_samples=1,
      init_batch_size=1,
      reverse=False,
      tau=1.0,
      params_dtype="float64",
      eps=0.0,
      input_distribution="gaussian",
    )
    bench = BenchmarkHD(cfg, init_benchmark=False)
    with torch.no_grad():
      bench.log_alpha.copy_(torch.as_tensor(log_alpha))
      bench.log_cp_cores.copy_(torch.as_tensor(log_cp_cores))
      x = torch.as_tensor(x0)
      marg = torch.log_softmax(bench.get_cum_transition_logits(x), dim=-1)
      last = torch.full((B,), N + 1, dtype=torch.long)
      log_u = bench._log_u_t(x, last)
      log_c = torch.logsumexp(bench.log_alpha[None, :] + log_u.sum(1), dim=-1)
      trans = torch.stack(
        [
          torch.log_softmax(
            bench.get_transition_logits(x, torch.full((B,), t, dtype=torch.long)), dim=-1
          )
          for t in range(N + 1)
        ]
      )
    out.update(
      {
        f"{name}/log_alpha": log_alpha,
        f"{name}/log_cp_cores": log_cp_cores,
        f"{name}/x0": x0,
        f"{name}/alpha": np.float64(alpha),
        f"{name}/log_onestep": bench.prior.log_p_onestep.numpy(),
        f"{name}/log_cum": bench.prior.log_p_cum.numpy(),
        f"{name}/plan_marginals": marg.numpy(),
        f"{name}/log_normalizer": log_c.numpy(),
        f"{name}/transition_marginals": trans.numpy(),
      }
    )
  np.savez_compressed(OUT, **out)
  print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
  main()

"""Cross-check against the published benchmark package (catsbench 1.4) without a network.

tests/dsb/data/catsbench_fixture.npz was made once by tools/make_catsbench_fixture.py in a
throwaway torch environment: catsbench's reference matrices, plan marginals (Eq. 8), normaliser
log c(x_0) (Eq. 6) and SB transition marginals (Eq. 11) on fixed float64 potentials, for a
gaussian and a uniform reference. Ours must equal them to 1e-10 in float64.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr26_jax.dsb import benchmark as B
from iclr26_jax.dsb import reference as R

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "catsbench_fixture.npz")
N, SKIP = 3, 2


@pytest.mark.parametrize("name, kind", [("g", "gaussian"), ("u", "uniform")])
def test_closed_forms_equal_catsbench_1_4(name, kind):
  fx = np.load(FIXTURE)
  get = lambda key: fx[f"{name}/{key}"]  # noqa: E731
  with jax.enable_x64(True):
    s = get("log_cp_cores").shape[1]
    ref = R.make_reference(kind, s, float(get("alpha")), N, SKIP, jnp.float64)
    pot = B.CPPotential(
      log_alpha=jnp.asarray(get("log_alpha")), log_cp_cores=jnp.asarray(get("log_cp_cores"))
    )
    x0 = jnp.asarray(get("x0"), jnp.int32)

    def close(ours, theirs):
      ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
      finite = np.isfinite(theirs)
      np.testing.assert_array_equal(np.isfinite(ours), finite)
      np.testing.assert_allclose(ours[finite], theirs[finite], rtol=0, atol=1e-10)

    close(ref.log_q_step, get("log_onestep"))
    close(ref.log_q_bar, get("log_cum"))
    close(B.plan_marginal_log_probs(pot, ref, x0), get("plan_marginals"))
    close(B.log_normalizer(pot, ref, x0), get("log_normalizer"))
    for t in range(N + 1):
      close(B.transition_marginal_log_probs(pot, ref, x0, t), get("transition_marginals")[t])

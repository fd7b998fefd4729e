"""The accuracy contract of ``pdns.fit_sampler`` / ``pdns.fit_discrete_sampler`` at their
defaults, as docs/methods/pdns.md states it under "Accuracy at the defaults": the page names the
tests that hold it, and they exist. The contract's own checks, in the slow tier, compare log Z^,
the mode weights and the law of ``.sample()`` with exact answers: a 1-D three-mode mixture with
log Z = 1.3 and a Potts chain enumerated over its 729 states (``tests/pdns/test_pdns_api.py``).
"""

from tests.helpers import assert_page_cites_existing_tests


def test_the_method_page_cites_this_contract():
  cited = assert_page_cites_existing_tests("pdns")
  assert ("tests/pdns/test_pdns_api.py", "test_fit_sampler_three_mode_mixture_at_defaults") in cited
  assert (
    "tests/pdns/test_pdns_api.py",
    "test_fit_discrete_sampler_potts_chain_at_defaults",
  ) in cited

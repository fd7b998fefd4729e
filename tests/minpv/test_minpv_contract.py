"""The accuracy contract of ``minpv.fit_log_ratio`` / ``minpv.estimate_mi`` at their defaults, as
docs/methods/minpv.md states it under "Accuracy at the defaults": the page names the tests that
hold it, and they exist. The contract's own checks, in the slow tier, compare the defaults'
estimates with the closed-form KL of Gaussian pairs (d = 4 and 8 with 40,000 samples a side, d = 6
and 10 with 10,000) and the MI of a correlated Gaussian pair, to 5 % (d = 4, 6, 8, the MI) and
10 % (d = 10, KL 7.1 nats) (``tests/minpv/test_minpv_api.py``).
"""

from tests.helpers import assert_page_cites_existing_tests


def test_the_method_page_cites_this_contract():
  cited = assert_page_cites_existing_tests("minpv")
  assert ("tests/minpv/test_minpv_api.py", "test_defaults_within_five_percent") in cited
  assert ("tests/minpv/test_minpv_api.py", "test_defaults_large_kl_d10") in cited
  small = "test_defaults_small_kl_within_five_percent_when_the_sample_allows"
  assert ("tests/minpv/test_minpv_api.py", small) in cited

"""The accuracy contract of ``qam.train_offline`` at its defaults, as docs/methods/qam.md states it
under "Accuracy at the defaults": the page names the tests that hold it, and they exist. The
contract's own checks are known-answer runs in the slow tier: a one-step contextual bandit whose
tilted policy is computed on a grid (``tests/qam/test_qam_api.py``) and a sparse-reward corridor
whose behaviour data's success rate is the bar (``tests/qam/test_qam_reward_scale.py``).
"""

from tests.helpers import assert_page_cites_existing_tests


def test_the_method_page_cites_this_contract():
  cited = assert_page_cites_existing_tests("qam")
  assert ("tests/qam/test_qam_api.py", "test_bandit_actions_move_to_the_best_action") in cited
  assert (
    "tests/qam/test_qam_reward_scale.py",
    "test_sparse_rewards_x001_beat_the_data_at_the_defaults",
  ) in cited

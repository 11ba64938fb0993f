"""Per-position χ² of the real verifier (V = 16, 200k trials, adversarial draft = -target logits)."""

import numpy as np
import pytest

from engine.proof.controls import SHARED_DRAFT_NOISE
from engine.proof.stats import chi2_positions, chi2_threshold, joint_step_chi2, merged_chi2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_position_follows_the_target(seed):
    results = chi2_positions(seed, vocab=16, gamma=3, trials=200_000)
    assert results[0].reached == 200_000
    for res in results:
        assert res.ok, (
            f"position {res.position}: χ²={res.chi2:.1f} > {chi2_threshold(res.df):.1f} (df={res.df})"
        )


def test_shared_draft_noise_is_caught():
    results = chi2_positions(0, vocab=16, gamma=3, trials=200_000, control=SHARED_DRAFT_NOISE)
    assert max(r.chi2 / chi2_threshold(r.df) for r in results) > 3


def test_merged_chi2_merges_small_bins():
    stat, df = merged_chi2(np.array([50, 50, 1, 2]), np.array([50.0, 50.0, 1.0, 2.0]))
    assert df == 1 and stat == 0.0  # the two small bins merge (expected 3 < 5) into the smallest big one
    stat, df = merged_chi2(np.array([40, 60, 3, 3]), np.array([50.0, 50.0, 3.0, 3.0]))
    assert df == 2 and stat == pytest.approx(4.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_law_of_one_verify_step_matches_the_exact_step_law(seed):
    stat, df = joint_step_chi2(seed, vocab=3, gamma=2, trials=200_000)
    assert stat <= chi2_threshold(df), (stat, df)

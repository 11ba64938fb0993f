"""The engine's step output: every step is reported to the observers, consistent with the loop's counters."""

import numpy as np
import pytest

from engine.loop import EngineConfig
from engine.proof.suite_engine import make_engine, mixed_requests, tiny_models
from engine.step import StepOutput, full_rows

TARGET, TRUNC, _ = tiny_models()


@pytest.mark.parametrize("speculative", [True, False])
def test_observers_see_every_step_consistent_with_the_stats(speculative):
    engine = make_engine(TARGET, TRUNC, policy="dspark", max_running=3)
    seen: list[StepOutput] = []
    engine.observers.append(seen.append)
    reqs = mixed_requests(5)
    out = engine.generate(reqs, speculative=speculative)
    st = engine.stats
    assert len(seen) == st.steps
    assert sum(o.verify_tokens for o in seen) == st.verify_tokens
    assert sum(int(o.emitted.sum()) for o in seen) == st.emitted == sum(len(v) for v in out.values())
    assert sum(int(o.accepted.sum()) for o in seen) == st.accepted
    gamma = 4 if speculative else 0
    for o in seen:
        r = o.rids.size
        assert o.conf.shape == o.raw_conf.shape == (r, gamma)
        assert np.all(o.lengths <= o.planned) and np.all(o.accepted <= o.lengths)
        assert np.all(o.emitted == o.accepted + 1) and o.start_s <= o.start_s + o.draft_s <= o.end_s
    firsts = np.concatenate([o.rids[o.first] for o in seen])
    finished = np.concatenate([o.rids[o.finished] for o in seen])
    assert sorted(firsts.tolist()) == sorted(finished.tolist()) == sorted(r.rid for r in reqs)


def test_full_rows_and_clock_validation():
    assert full_rows(np.array([4, 4, 2]), np.array([False, True, False]), 4).tolist() == [True, False, False]
    with pytest.raises(ValueError, match="clock"):
        EngineConfig(clock="sundial")

"""The one stale-confidence buffer (specsched.stale) shared by the simulator and the engine."""

import numpy as np
import pytest

from specsched.stale import StaleBuffer


def rows(step: int, n: int = 3, gamma: int = 2) -> np.ndarray:
    """Distinct, recognisable rows: value = step + slot / 10 (scaled into [0, 1])."""
    return (step + np.arange(n)[:, None] / 10 + np.zeros((n, gamma))) / 100


@pytest.mark.parametrize("delay", [1, 2, 3])
def test_lagged_returns_the_row_from_delay_steps_earlier(delay):
    buf = StaleBuffer(slots=4, gamma=2, delay=delay)
    slots = np.arange(3)
    prior = np.full((3, 2), 0.5)
    for step in range(8):
        age = np.full(3, step)
        got = buf.lagged(slots, age, prior)
        if step < delay:
            assert np.array_equal(got, prior)  # young: the stated prior, never the current row
        else:
            assert np.array_equal(got, rows(step - delay))
        buf.record(slots, age, rows(step))


def test_young_and_old_requests_mix_and_prior_forms():
    buf = StaleBuffer(slots=3, gamma=2, delay=2)
    slots = np.array([0, 1, 2])
    for step in range(3):
        buf.record(slots, np.full(3, step), rows(step))
    age = np.array([2, 1, 0])  # slot 0 old enough, slots 1 and 2 young
    got = buf.lagged(slots, age, np.array([0.1, 0.2]))  # one row for every young request
    assert np.array_equal(got[0], rows(0)[0])
    assert np.array_equal(got[1:], np.array([[0.1, 0.2], [0.1, 0.2]]))
    got = buf.lagged(slots, age, 0.3)  # a scalar prior
    assert np.all(got[1:] == 0.3)


def test_exchange_with_delay_zero_is_the_current_row():
    """delay = 0 (the negative control): record first, then read back the current step's row."""
    buf = StaleBuffer(slots=2, gamma=2, delay=0)
    cur = rows(5, n=2)
    assert np.array_equal(buf.exchange(np.arange(2), np.array([4, 0]), cur, 0.0), cur)


def test_exchange_equals_lagged_before_record():
    a, b = StaleBuffer(3, 2, 2), StaleBuffer(3, 2, 2)
    slots = np.arange(3)
    for step in range(5):
        age = np.full(3, step)
        before = a.lagged(slots, age, 0.25)
        a.record(slots, age, rows(step))
        assert np.array_equal(before, b.exchange(slots, age, rows(step), 0.25))


def test_compact_moves_rows_with_their_requests():
    buf = StaleBuffer(slots=4, gamma=2, delay=1)
    slots = np.arange(4)
    buf.record(slots, np.zeros(4, dtype=np.int64), rows(0, n=4))
    buf.compact(np.array([True, False, True, True]), 4)  # slot 1 left
    got = buf.lagged(np.arange(3), np.ones(3, dtype=np.int64), 0.0)
    assert np.array_equal(got, rows(0, n=4)[[0, 2, 3]])


def test_lagged_returns_a_fresh_array():
    buf = StaleBuffer(2, 2, 1)
    buf.record(np.arange(2), np.zeros(2, dtype=np.int64), rows(0, n=2))
    got = buf.lagged(np.arange(2), np.ones(2, dtype=np.int64), 0.0)
    got[:] = 1.0
    assert np.array_equal(buf.lagged(np.arange(2), np.ones(2, dtype=np.int64), 0.0), rows(0, n=2))


@pytest.mark.parametrize("args", [(4, 2, -1), (4, 2, 1.5), (-1, 2, 1), (4, -2, 1)])
def test_bad_arguments_are_refused(args):
    with pytest.raises(ValueError, match="StaleBuffer"):
        StaleBuffer(*args)


def test_record_keeps_only_drafted_positions():
    """Positions past a request's draft depth were never drafted: they hold the prior, not a value."""
    buf = StaleBuffer(slots=2, gamma=3, delay=1)
    conf = np.array([[0.9, 0.8, 0.7], [0.6, 0.5, 0.4]])
    prior = np.array([[0.3, 0.3, 0.3], [0.2, 0.2, 0.2]])
    buf.record(np.arange(2), np.zeros(2, dtype=np.int64), conf, depths=np.array([2, 0]), prior=prior)
    got = buf.lagged(np.arange(2), np.ones(2, dtype=np.int64), 0.0)
    assert np.array_equal(got, np.array([[0.9, 0.8, 0.3], [0.2, 0.2, 0.2]]))

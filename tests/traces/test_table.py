"""RequestTable: validation, immutability, selection."""

from __future__ import annotations

import numpy as np
import pytest

from traces import RequestTable


def table(n: int = 5) -> RequestTable:
    return RequestTable(
        np.arange(n, dtype=float),
        np.arange(n) + 10,
        np.arange(n) + 1,
        domain=np.array(["chat", "code"] * (n // 2) + ["chat"] * (n % 2), dtype=object),
        session_id=np.arange(n) % 2,
        hash_ids=tuple(np.arange(k) for k in range(n)),
        meta={"format": "test"},
    )


def test_fields_dtypes_and_len():
    t = table()
    assert len(t) == 5 and t.arrival_s.dtype == np.float64 and t.input_tokens.dtype == np.int64
    assert t.duration_s == 4.0 and t.rate_per_s == 1.0
    assert t.columns() == ["arrival_s", "input_tokens", "output_tokens", "domain", "session_id", "hash_ids"]
    assert "requests=5" in repr(t)


def test_arrays_are_read_only_copies():
    arrival = np.array([0.0, 1.0])
    t = RequestTable(arrival, [1, 2], [3, 4])
    arrival[1] = 9.0  # the caller's array stays theirs
    assert t.arrival_s[1] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        t.arrival_s[0] = 5.0
    with pytest.raises(AttributeError):
        t.arrival_s = np.zeros(2)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"arrival_s": [1.0, 0.0]}, "non-decreasing"),
        ({"arrival_s": [-1.0, 0.0]}, "≥ 0"),
        ({"arrival_s": [0.0, np.nan]}, "finite"),
        ({"input_tokens": [1, -1]}, "input_tokens must be ≥ 0"),
        ({"output_tokens": [1.5, 2]}, "whole numbers"),
        ({"input_tokens": [1, 2, 3]}, "has 3 entries"),
        ({"domain": ["a", 3]}, "str values"),
        ({"hash_ids": (np.zeros(1),)}, "hash_ids has 1 entries"),
        ({"arrival_s": [[0.0, 1.0]]}, "1-D"),
    ],
)
def test_validation(kwargs, words):
    base = {"arrival_s": [0.0, 1.0], "input_tokens": [1, 2], "output_tokens": [3, 4]}
    with pytest.raises(ValueError, match=words):
        RequestTable(**(base | kwargs))


def test_take_and_replace():
    t = table()
    sub = t.take(np.array([True, False, True, False, True]), note="x")
    assert sub.arrival_s.tolist() == [0.0, 2.0, 4.0]
    assert [h.size for h in sub.hash_ids] == [0, 2, 4]
    assert sub.domain.tolist() == ["chat", "chat", "chat"] and sub.meta == {"format": "test", "note": "x"}
    r = t.replace(output_tokens=np.ones(5, dtype=np.int64), tag=1)
    assert r.output_tokens.tolist() == [1] * 5 and r.meta["tag"] == 1 and t.output_tokens[0] == 1
    with pytest.raises(ValueError, match="mask has shape"):
        t.take(np.ones(3, dtype=bool))


def test_empty_table():
    t = RequestTable([], [], [])
    assert len(t) == 0 and t.duration_s == 0.0 and np.isnan(t.rate_per_s)

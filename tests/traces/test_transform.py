"""Transformations: pure, count-preserving where promised, and recorded in meta."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import traces
from traces import RequestTable

from .conftest import BURSTGPT_V1


@st.composite
def tables(draw, min_size: int = 2) -> RequestTable:
    n = draw(st.integers(min_size, 60))
    gaps = draw(st.lists(st.floats(0, 50, allow_nan=False), min_size=n - 1, max_size=n - 1))
    inp = draw(st.lists(st.integers(0, 20000), min_size=n, max_size=n))
    out = draw(st.lists(st.integers(0, 4000), min_size=n, max_size=n))
    return RequestTable(np.concatenate([[0.0], np.cumsum(gaps)]), inp, out)


@given(tables(), st.floats(0.01, 100))
def test_scale_rate_preserves_count_and_scales_duration(t, k):
    fast = traces.scale_rate(t, k)
    assert len(fast) == len(t)
    np.testing.assert_allclose(fast.duration_s, t.duration_s / k, rtol=1e-12)
    np.testing.assert_array_equal(fast.input_tokens, t.input_tokens)
    assert fast.meta["rate_scale"] == pytest.approx(k)


def test_scale_rate_on_the_shipped_trace():
    conv = traces.load("azure2023-conv")
    twice = traces.scale_rate(conv, 2.0)
    assert len(twice) == 19366 and twice.duration_s == pytest.approx(conv.duration_s / 2)
    assert twice.rate_per_s == pytest.approx(2 * conv.rate_per_s)
    at10 = traces.to_rate(conv, 10.0)
    assert at10.rate_per_s == pytest.approx(10.0) and len(at10) == len(conv)
    with pytest.raises(ValueError, match="factor must be a finite number > 0"):
        traces.scale_rate(conv, 0)


@given(tables(), st.integers(2, 4000))
def test_clip_fits_every_request_in_the_context(t, ctx):
    c = traces.clip(t, ctx)
    assert np.all(c.input_tokens + c.output_tokens <= ctx)
    assert np.all(c.output_tokens <= t.output_tokens) and np.all(c.input_tokens <= t.input_tokens)
    # The default output cap is ctx - 1 (room for a prompt token): an empty prompt with output = ctx is cut.
    fits = (t.input_tokens + t.output_tokens <= ctx) & (t.output_tokens <= ctx - 1)
    np.testing.assert_array_equal(c.input_tokens[fits], t.input_tokens[fits])
    assert c.meta["clipped_rows"] == int((~fits).sum())


def test_clip_with_output_cap():
    t = RequestTable([0.0, 1.0], [100, 10], [50, 200])
    c = traces.clip(t, 120, max_output=64)
    assert c.output_tokens.tolist() == [50, 64] and c.input_tokens.tolist() == [70, 10]
    with pytest.raises(ValueError, match="max_output"):
        traces.clip(t, 120, max_output=120)


def test_window_and_head():
    t = RequestTable(np.arange(10.0), np.arange(10), np.ones(10))
    w = traces.window(t, 2.5, 6.0)
    assert w.arrival_s.tolist() == [0.0, 1.0, 2.0] and w.input_tokens.tolist() == [3, 4, 5]
    kept = traces.window(t, 2.5, rebase=False)
    assert kept.arrival_s[0] == 3.0 and len(kept) == 7
    assert len(traces.head(t, 4)) == 4
    with pytest.raises(ValueError, match="start_s < end_s"):
        traces.window(t, 5, 5)


def test_sample_is_seeded_and_ordered():
    t = traces.load("azure2023-code")
    a = traces.sample(t, 1000, np.random.default_rng(1))
    b = traces.sample(t, 1000, np.random.default_rng(1))
    assert len(a) == 1000 and np.all(np.diff(a.arrival_s) >= 0) and a.arrival_s[0] == 0
    np.testing.assert_array_equal(a.input_tokens, b.input_tokens)
    assert len(traces.sample(t, 20000, np.random.default_rng(2), replace=True)) == 20000
    with pytest.raises(ValueError, match="replace=True"):
        traces.sample(t, 20000, np.random.default_rng(2))
    with pytest.raises(TypeError, match="Generator"):
        traces.sample(t, 5, 42)


def test_filter_rows(write):
    t = traces.load(write("b.csv", BURSTGPT_V1), drop_failed=False)
    assert traces.filter_rows(t, model="gpt-4").model.tolist() == ["GPT-4", "GPT-4"]
    api = traces.filter_rows(t, domain="api", min_output=1)
    assert api.domain.tolist() == ["API log"] and api.meta["filtered_rows"] == 4
    assert len(traces.filter_rows(t, max_input=500)) == 3
    assert len(traces.filter_rows(t, mask=t.output_tokens > 0)) == 3
    with pytest.raises(ValueError, match="no request has model"):
        traces.filter_rows(t, model="Claude")
    with pytest.raises(ValueError, match="no model column"):
        traces.filter_rows(traces.load("azure2023-code"), model="x")


def test_merge_superposes_and_keeps_labels():
    code, conv = traces.load("azure2023-code"), traces.load("azure2023-conv")
    m = traces.merge(code, conv)
    assert len(m) == len(code) + len(conv) and np.all(np.diff(m.arrival_s) >= 0)
    assert (m.domain == "code").sum() == len(code) and (m.domain == "chat").sum() == len(conv)
    assert m.rate_per_s == pytest.approx(code.rate_per_s + conv.rate_per_s, rel=0.05)


def test_transformations_do_not_touch_the_input():
    t = RequestTable(np.arange(5.0), np.arange(5) * 100, np.arange(5) + 1)
    before = (t.arrival_s.copy(), t.input_tokens.copy())
    traces.scale_rate(t, 3)
    traces.clip(t, 150)
    traces.window(t, 1, 3)
    np.testing.assert_array_equal(t.arrival_s, before[0])
    np.testing.assert_array_equal(t.input_tokens, before[1])

"""Cost tables: interpolation modes, CSV loading, roofline shape, bad input."""

import subprocess
import sys

import numpy as np
import pytest

import specsched as S


def test_step_and_linear_modes():
    step = S.CostTable.from_points([1, 4, 8], [1.0, 2.0, 4.0])
    lin = S.CostTable.from_points([1, 4, 8], [1.0, 2.0, 4.0], mode="linear")
    assert step.latency([1, 2, 4, 5, 8]).tolist() == [1.0, 2.0, 2.0, 4.0, 4.0]
    assert lin.latency(2) == pytest.approx(1 + 1 / 3)
    # Past the last point both extrapolate linearly from the last two.
    assert step.latency(12) == pytest.approx(6.0) and lin.latency(12) == pytest.approx(6.0)
    assert step.latency(100_000) == pytest.approx(4 + 0.5 * (100_000 - 8))
    assert step.sps(4) == pytest.approx(0.5)
    assert step.with_draft(1.0).step_seconds(4) == pytest.approx(3.0)
    assert step.with_draft(1.0).sps(4) == pytest.approx(1 / 3)


def test_jagged_profile_is_legal_and_tail_slope_clamped():
    t = S.CostTable.from_points([1, 2, 3], [1.0, 0.8, 0.7])
    assert t.latency(2) == 0.8 and t.latency(10) == 0.7


def test_csv_round_trip(tmp_path):
    t = S.CostTable.from_points([1, 8, 64], [0.001, 0.0012, 0.003])
    t.to_csv(tmp_path / "c.csv")
    back = S.CostTable.from_csv(tmp_path / "c.csv")
    assert back.tokens.tolist() == [1, 8, 64] and np.allclose(back.seconds, t.seconds)
    assert S.load_cost(str(tmp_path / "c.csv")).tokens.tolist() == [1, 8, 64]


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty cost table"),
        ("tok,sec\n1,0.1\n", "header must have columns"),
        ("tokens,seconds\n", "no rows"),
        ("tokens,seconds\n1,0.1\nx,0.2\n", r"c.csv:3: field 'tokens': not a number"),
        ("tokens,seconds\n1,0.1\n2,-1\n", r"c.csv:3: field 'seconds': latency must be > 0"),
        ("tokens,seconds\n1,0.1\n1,0.2\n", r"c.csv:3: field 'tokens': duplicate size"),
        ("tokens,seconds\n4,0.1\n2,0.2\n", r"c.csv:3: field 'tokens': sizes not sorted"),
        ("tokens,seconds\n1,0.1,7\n", r"c.csv:2: expected 2 columns"),
    ],
)
def test_bad_csv(tmp_path, text, match):
    (tmp_path / "c.csv").write_text(text)
    with pytest.raises(S.InputError, match=match):
        S.CostTable.from_csv(tmp_path / "c.csv")


def test_missing_csv(tmp_path):
    with pytest.raises(S.InputError, match="cannot read cost table"):
        S.CostTable.from_csv(tmp_path / "nope.csv")
    with pytest.raises(S.InputError, match="unknown cost table 'nope'"):
        S.load_cost("nope")


@pytest.mark.parametrize(
    "tokens, seconds, match",
    [
        ([], [], "empty"),
        ([1, 2], [0.1, 0.0], "positive"),
        ([1, 2], [0.1, -1.0], "positive"),
        ([2, 1], [0.1, 0.2], "not sorted"),
        ([1, 1], [0.1, 0.2], "duplicate size tokens=1"),
        ([0, 1], [0.1, 0.2], "≥ 1"),
        ([1, 2], [0.1], "2 token sizes but 1 latencies"),
    ],
)
def test_bad_points(tokens, seconds, match):
    with pytest.raises(ValueError, match=match):
        S.CostTable.from_points(tokens, seconds)


def _knee(table, lo=1):
    """First B where latency exceeds the flat region by 10%."""
    b = np.arange(lo, 4096)
    lat = table.latency(b)
    return int(b[np.argmax(lat > 1.1 * lat[0])])


@pytest.mark.parametrize("gpu, lo, hi", [("h100", 180, 320), ("h200", 120, 260)])
def test_roofline_dense_knee(gpu, lo, hi):
    t = S.CostTable.roofline("dense-8b", gpu, context_tokens=0)
    assert lo <= _knee(t) <= hi
    # Above the knee the step is compute-bound: linear with slope 2·P/(η_f·F).
    slope = (t.latency(3000) - t.latency(2000)) / 1000
    assert slope == pytest.approx(2 * 8e9 / (0.6 * 989e12), rel=1e-6)


def test_h200_faster_only_below_knee():
    h100 = S.CostTable.roofline("dense-8b", "h100", context_tokens=0)
    h200 = S.CostTable.roofline("dense-8b", "h200", context_tokens=0)
    assert h200.latency(16) < 0.8 * h100.latency(16)
    assert h200.latency(2048) == pytest.approx(h100.latency(2048))


def test_kv_reads_and_moe_expert_growth():
    base = S.CostTable.roofline("dense-8b", "h100", context_tokens=0)
    kv = S.CostTable.roofline("dense-8b", "h100", context_tokens=4096)
    # KV reads scale with running requests, not with verify tokens: a per-request term.
    assert kv.latency(64) == base.latency(64) and base.request_seconds == 0
    assert kv.request_seconds == pytest.approx(4096 * 131072 / (0.9 * 3.35e12))
    assert kv.step_seconds(64, requests=16) == pytest.approx(kv.latency(64) + 16 * kv.request_seconds)
    moe = S.CostTable.roofline("moe-284b-a13b", "h200", tp=8)
    # Routed experts are read as more tokens touch them, well before the compute knee.
    assert moe.latency(64) > 2 * moe.latency(1)


def test_builtins_and_bad_roofline():
    for name in S.BUILTIN_COSTS:
        t = S.builtin_cost(name)
        assert t.name == name and np.all(np.diff(t.latency(np.arange(1, 5000))) >= -1e-15)
    with pytest.raises(ValueError, match="unknown gpu 'x999'"):
        S.CostTable.roofline("dense-8b", "x999")
    with pytest.raises(ValueError, match="unknown model"):
        S.CostTable.roofline("dense-9b", "h100")
    with pytest.raises(ValueError, match="eta_f.*must be in"):
        S.CostTable.roofline("dense-8b", "h100", eta_f=0)


def test_import_purity():
    code = "import sys, specsched; print('torch' in sys.modules, 'simpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

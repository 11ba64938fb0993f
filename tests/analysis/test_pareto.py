"""Pareto extraction on hand-made points; interpolation on a known frontier; gains and the report."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from analysis.pareto import LOWER_BOUND, UNREACHABLE, Frontier, gains, operating_points, pareto_indices
from analysis.report import analyze, gains_table, markdown
from tests.analysis.conftest import specbed

FAKE = "tests.analysis.fake_model:MODEL"


def test_pareto_on_hand_made_points():
    #        0     1     2     3     4     5     6 (dup of 2)
    x = [100.0, 200.0, 300.0, 250.0, 50.0, 300.0, 300.0]
    y = [90.0, 80.0, 40.0, 30.0, 95.0, 10.0, 40.0]
    idx = pareto_indices(x, y)
    # 3 (250, 30) is dominated by 2; 5 (300, 10) by 2; 6 duplicates 2 (one kept).
    assert [(x[i], y[i]) for i in idx] == [(50, 95), (100, 90), (200, 80), (300, 40)]
    assert pareto_indices([1.0, math.nan], [1.0, 5.0]).tolist() == [0]
    assert pareto_indices([], []).tolist() == []


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=30))
def test_pareto_property(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    idx = set(pareto_indices(x, y).tolist())
    for i in range(len(points)):
        dominated = np.any((x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i])))
        if i in idx:
            assert not dominated
        elif not dominated:  # a non-dominated point left out must duplicate a kept one
            assert any(x[j] == x[i] and y[j] == y[i] for j in idx)
    xs = x[sorted(idx, key=lambda i: x[i])]
    assert np.all(np.diff(xs) > 0)


def test_interpolation_on_a_known_frontier():
    # Throughput rises 1000 -> 4000 while per-user speed falls 200 -> 50 (straight segments).
    front = Frontier.of([1000, 2000, 4000], [200, 150, 50])
    assert front.throughput_at(150) == (2000.0, "ok")
    assert front.throughput_at(100) == (3000.0, "ok")  # half-way along the second segment
    assert front.throughput_at(175) == (1500.0, "ok")
    assert front.throughput_at(200) == (1000.0, "ok")
    assert front.throughput_at(40) == (4000.0, LOWER_BOUND)  # slower than any measured point
    value, flag = front.throughput_at(250)
    assert math.isnan(value) and flag == UNREACHABLE
    assert front.speed_at(3000) == (100.0, "ok")
    assert front.speed_at(500) == (200.0, LOWER_BOUND)
    assert front.speed_at(4001)[1] == UNREACHABLE


def test_iso_slo_and_iso_throughput_gains():
    base = Frontier.of([1000, 2000, 4000], [200, 150, 50])
    better = Frontier.of([1500, 3000, 6000], [300, 225, 75])  # 1.5x in both coordinates
    table = {g.series: g for g in gains({("", "base"): base, ("", "new"): better}, "base", (100.0,))}
    assert table["base"].iso_slo_gain == 0 and table["base"].iso_throughput_speedup == 0
    g = table["new"]
    # iso-SLO: new at 100 tok/s/user: between (3000, 225) and (6000, 75): 3000 + 3000 * 125/150 = 5500.
    assert math.isclose(g.throughput, 5500) and math.isclose(g.iso_slo_gain, 5500 / 3000 - 1)
    # iso-throughput at the baseline's 3000 tok/s/GPU: new runs 225 tok/s/user vs 100.
    assert math.isclose(g.speed, 225) and math.isclose(g.iso_throughput_speedup, 1.25)


def _rows():
    rows = []
    for series, scale in (("MTP-1", 1.0), ("DSpark", 1.5)):
        for conc, (x, y) in zip((8, 16, 32), ((1000, 200), (2000, 150), (4000, 50))):
            for _seed, jitter in ((0, 0.99), (1, 1.01)):
                rows.append(
                    {
                        "series": series,
                        "facet": "",
                        "point": f"concurrency={conc}",
                        "summary": {
                            "throughput_tok_s_per_gpu": x * scale * jitter,
                            "per_user_tok_s_mean": y * scale * jitter,
                            "tau_mean": 2.0,
                        },
                    }
                )
    return rows


def test_seeds_are_averaged_and_report_renders():
    points = operating_points(_rows(), "throughput_tok_s_per_gpu", "per_user_tok_s_mean")
    assert len(points[("", "MTP-1")]) == 3 and points[("", "MTP-1")][0]["n"] == 2
    assert math.isclose(points[("", "MTP-1")][0]["x"], 1000)
    spec = {"baseline": "MTP-1", "slo": [100]}
    manifest = {"name": "t", "model": "fake", "cells": [{}] * 12, "analysis": spec}
    result = analyze(manifest, _rows())
    text = gains_table(result)
    assert "MTP-1 *" in text and "+83%" in text and "+125%" in text
    md = markdown(manifest, _rows(), result)
    assert "![Pareto frontiers](pareto.png)" in md and "| 100 | DSpark | 5,500 | +83% | 225.0 | +125% |" in md


def test_pareto_and_report_commands(sweep_file, tmp_path):
    out = tmp_path / "o"
    assert specbed("sweep", str(sweep_file), "--out", str(out), "--model", FAKE, "--quiet").returncode == 0
    res = specbed("pareto", str(out), "--baseline", "AR", "--slo", "100", "--out", str(tmp_path / "p.png"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG" and "AR *" in res.stdout
    res = specbed("report", str(out))
    assert res.returncode == 0, res.stderr
    md = (out / "summary.md").read_text()
    assert "## Gains against `MTP-1`" in md and "## Operating points" in md and (out / "pareto.png").exists()
    res = specbed("pareto", str(out), "--baseline", "nobody")
    assert res.returncode == 2 and "no series 'nobody'" in res.stderr


def test_pareto_points_are_labelled_with_their_load():
    from analysis.pareto import load_label

    assert load_label("concurrency=8, num_requests=320") == "C=8"
    assert load_label("rate=4.0") == "4.0 req/s"
    assert load_label("speedup=2, rate=1") == "1 req/s, ×2"
    assert load_label("k=3") == "k=3" and load_label("") == ""

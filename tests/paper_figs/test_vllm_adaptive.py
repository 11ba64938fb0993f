"""paper_figs.vllm_adaptive: results.json in the issue's layout, the blog's ratios, bad flags."""

from __future__ import annotations

import json

import pytest

from paper_figs import vllm_adaptive as va
from specsched.io.errors import InputError


def test_tiny_run_writes_the_results_layout(tmp_path):
    assert va.main(["--tiny", "--out", str(tmp_path), "--jobs", "1", "--quiet"]) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res) == {"concurrency", "throughput_tok_s", "tpot_ms", "accepted_length"}
    assert res["concurrency"] == va.LOADS[True][0]
    for metric in ("throughput_tok_s", "tpot_ms", "accepted_length"):
        assert set(res[metric]) == set(va.ARMS)
        assert all(len(v) == len(res["concurrency"]) for v in res[metric].values())
    assert all(t == 1.0 for t in res["accepted_length"]["no_spec"])
    assert "| fixed7_below_no_spec_256 | 53% |" in (tmp_path / "table.md").read_text()
    assert (tmp_path / "vllm_adaptive.png").read_bytes()[:4] == b"\x89PNG"


def test_ratios_in_the_blogs_terms():
    loads = [1, 16, 32, 64, 128, 256]
    tput = {
        "no_spec": [1, 1, 1, 1, 1, 100.0],
        "fixed5": [1, 1, 1, 1, 1, 74.0],
        "fixed6": [1, 1, 1, 1, 1, 74.0],
        "fixed7": [2, 90, 95, 100.0, 80, 47.0],
        "adaptive": [2, 99, 100, 105.0, 104, 141.0],
    }
    r = va.ratios({"concurrency": loads, "throughput_tok_s": tput})
    assert r["fixed7_peak_concurrency"] == 64
    assert r["fixed7_shed_from_peak"] == pytest.approx(0.53)
    assert r["fixed5_below_no_spec_256"] == pytest.approx(0.26)
    assert r["adaptive_over_fixed7_16_64"] == pytest.approx([0.05, 0.10])
    assert r["adaptive_over_fixed7_128"] == pytest.approx(0.30)
    assert r["adaptive_over_best_fixed_256"] == pytest.approx(141 / 74 - 1)
    assert r["adaptive_over_no_spec_256"] == pytest.approx(0.41)
    assert va._within_third(0.30, 0.41) and not va._within_third(0.20, 0.41)
    assert va._within_third([0.04, 0.12], [0.05, 0.10]) and not va._within_third([0.0, 0.1], [0.05, 0.10])


def test_bad_flag_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="vllm_adaptive"):
        va.main(["--jobs", "x", "--out", str(tmp_path)])

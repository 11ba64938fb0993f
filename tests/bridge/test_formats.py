"""Every acceptance format users paste, from the fixtures in tests/bridge/vllm_samples (written from each
format's documented fields, not copied from anyone's log): τ, per-position rates and drafts against the
hand computation; τ-only sources refused without --tau-only and fitted with it; real-world variations
(ANSI colours, CRLF, prefixes, thousands separators, pasted tables, several engines)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bridge.acceptance import read_acceptance, tau_curve
from specbed.cli import main as specbed
from specsched.io.errors import InputError

SAMPLES = Path(__file__).parent / "vllm_samples"
#: ground truth A: 2000 drafts of K = 3, a = drafts with ≥ i + 1 accepted
A_RATES = np.array([1668, 1258, 931]) / 2000
A_TAU = 1 + 3857 / 2000

# (fixture, kind, drafts, rates by hand, τ by hand, tolerance against the hand figures)
CASES = [
    # two intervals: D = drafted / K = 1200, 800; rates pooled from the printed 3 decimals
    ("v1_0_10_eagle3.log", "log", 2000, [0.834, 0.629, (0.466 * 1200 + 0.465 * 800) / 2000], None, 1e-9),
    # n-gram drafts shorter than K: D = Accepted / Σ rates = 1360 / 1.369, not 2480 / 3
    ("v1_0_8_ngram.log", "log", 1360 / 1.369, [0.705, 0.453, 0.211], 2.369, 1e-9),
    ("prom_ui_table.txt", "prometheus", 2000, A_RATES, A_TAU, 1e-12),
    ("grafana_table.md", "prometheus", 2000, A_RATES, A_TAU, 1e-12),
    ("per_request.jsonl", "per-request json", 2000, A_RATES, A_TAU, 1e-12),
    # percent to 2 decimals, reconciled to accepted / drafts = 3857 / 2000 (moves ≤ 0.00005)
    ("bench_console.txt", "vllm bench console", 2000, [0.834, 0.629, 0.4655], A_TAU, 5e-5),
    # rates to 2 decimals (sum 1.99) reconciled to 1993 / 1000: each within its rounding (± 0.005)
    ("offline_spec_decode.txt", "spec_decode.py printout", 1000, [0.78, 0.57, 0.39, 0.25], 2.993, 5e-3),
]


@pytest.mark.parametrize("name,kind,drafts,rates,tau,tol", CASES, ids=[c[0] for c in CASES])
def test_fixture_matches_hand_computation(name, kind, drafts, rates, tau, tol):
    acc = read_acceptance([SAMPLES / name])
    assert acc.kind == kind and acc.measured
    assert acc.drafts == pytest.approx(drafts, rel=1e-9)
    np.testing.assert_allclose(acc.rates, rates, atol=tol)
    want_tau = tau if tau is not None else 1 + float(np.sum(rates))
    assert acc.tau == pytest.approx(want_tau, abs=max(tol, 1e-9))
    assert abs(acc.tau - A_TAU) < 0.005 or name in ("v1_0_8_ngram.log", "offline_spec_decode.txt")
    assert acc.notes  # provenance says what is exact and what is estimated


def test_offline_printout_reconciled_rates_stay_in_their_rounding():
    acc = read_acceptance([SAMPLES / "offline_spec_decode.txt"])
    assert np.all(np.abs(acc.rates - [0.78, 0.57, 0.39, 0.25]) <= 0.005 + 1e-12)
    assert acc.tau == pytest.approx(1 + 1993 / 1000, abs=1e-12)  # exact: the printed counts


@pytest.mark.parametrize(
    "name,tau,k",
    [("v0_0_6_draft_model.log", 5120 / 2000, 4), ("sglang_eagle.log", (4 * 3.1 + 12 * 2.9) / 16, 3)],
)
def test_tau_only_sources_refused_then_fitted(name, tau, k):
    with pytest.raises(InputError, match=r"carries τ = .* only, no per-position counts: pass --tau-only"):
        read_acceptance([SAMPLES / name])
    acc = read_acceptance([SAMPLES / name], tau_only=True)
    assert not acc.measured and acc.per_pos.size == k
    assert acc.tau == pytest.approx(tau, abs=1e-9)
    assert any("FITTED" in n for n in acc.notes)
    c = acc.conditional()
    np.testing.assert_allclose(c, c[0])  # constant acceptance
    with pytest.raises(InputError, match="--k 2 disagrees"):
        read_acceptance([SAMPLES / name], tau_only=True, k=2)


def test_v0_tau_is_emitted_over_drafts_not_one_plus_accepted():
    acc = read_acceptance([SAMPLES / "v0_0_6_draft_model.log"], tau_only=True)
    assert acc.tau == pytest.approx(2.56) and acc.tau != pytest.approx(1 + 3700 / 2000)


def test_tau_curve_inverts():
    for tau, k in ((1.0, 3), (2.5, 4), (6.0, 5)):
        assert 1 + tau_curve(tau, k).sum() == pytest.approx(tau, abs=1e-9)


def test_sparse_histogram_and_bare_objects(tmp_path):
    objs = [
        {"acceptance_histogram": {"0": 100, "1": 150, "2": 100, "3": 350}, "num_spec_tokens": 3},
        {"acceptance_histogram": {"0": 232, "1": 260, "2": 227, "3": 581}, "num_spec_steps": 1300},
    ]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(objs))
    acc = read_acceptance([path])
    np.testing.assert_allclose(acc.rates, A_RATES)
    stream = tmp_path / "stream.txt"
    stream.write_text(
        "".join(f"data: {json.dumps({'metrics': {'speculative_decoding': o}})}\n\n" for o in objs)
        + "data: [DONE]\n"
    )
    np.testing.assert_allclose(read_acceptance([stream]).rates, A_RATES)


def test_prometheus_variants_parse_alike(tmp_path):
    text = (SAMPLES / "prom_ui_table.txt").read_text()
    base = read_acceptance([SAMPLES / "prom_ui_table.txt"])
    variants = {
        "crlf_ansi.txt": "\r\n".join(
            f"\x1b[1m{x}\x1b[0m" if x.startswith("vllm") else x for x in text.splitlines()
        ),
        "pipes.md": "\n".join(f"| {x.replace(chr(9), ' | ')} |" for x in text.splitlines()),
        "by_name.txt": "\n".join(
            x.replace("vllm:spec_decode_", '{__name__="vllm:spec_decode_', 1).replace(
                "_total{", '_total", ', 1
            )
            for x in text.splitlines()
        ),
    }
    for name, body in variants.items():
        path = tmp_path / name
        path.write_text(body)
        acc = read_acceptance([path])
        np.testing.assert_allclose(acc.per_pos, base.per_pos, err_msg=name)
        assert acc.drafts == base.drafts


def test_cli_prints_provenance_and_writes_it(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert (
        specbed(
            [
                "curves",
                "from-vllm",
                str(SAMPLES / "v1_0_8_ngram.log"),
                "--drafter",
                "ngram",
                "--domain",
                "code",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "2.369" in text and "provenance: 1 interval(s): drafts = Accepted / Σ rates" in text
    assert "drafts shorter than K" in json.loads(out.read_text())["description"]
    fitted = tmp_path / "f.json"
    assert (
        specbed(
            [
                "curves",
                "from-vllm",
                str(SAMPLES / "sglang_eagle.log"),
                "--drafter",
                "eagle",
                "--domain",
                "chat",
                "--out",
                str(fitted),
                "--tau-only",
            ]
        )
        == 0
    )
    assert "FITTED" in json.loads(fitted.read_text())["description"]
    assert "ESTIMATE" in json.loads(fitted.read_text())["description"]


def test_compare_reads_console_report_and_per_request_json(tmp_path, capsys):
    from bridge.bench import load_vllm_result

    console = load_vllm_result(SAMPLES / "bench_console.txt")
    assert console["mean_tpot_ms"] == 11.82 and console["p99_itl_ms"] == 71.04
    assert console["spec_decode_acceptance_length"] == 2.93 and console["request_throughput"] == 2.10
    per = load_vllm_result(SAMPLES / "per_request.jsonl")
    assert per["completed"] == 3 - 1  # the n > 1 response has metrics null
    assert per["mean_ttft_ms"] == pytest.approx(((1.2 + 84.1) + (3.0 + 120.5)) / 2)
    assert per["mean_tpot_ms"] == pytest.approx((9600 / 1200 + 24000 / 2400) / 2)
    assert per["mean_itl_ms"] == pytest.approx((8.0 * 1200 + 10.0 * 2400) / 3600)
    assert per["spec_decode_acceptance_length"] == pytest.approx(A_TAU)
    run = tmp_path / "run"
    assert specbed(["run", "--quiet", "--set", "workload.num_requests=20", "--out", str(run)]) == 0
    for name in ("bench_console.txt", "per_request.jsonl"):
        capsys.readouterr()
        assert specbed(["compare", str(run), str(SAMPLES / name)]) == 0
        text = capsys.readouterr().out
        row = next(line for line in text.splitlines() if line.startswith("TPOT mean"))
        assert row.split()[-1].endswith("%")  # both sides present
        assert next(line for line in text.splitlines() if line.startswith("acceptance length"))


def test_csv_export_and_display_units(tmp_path):
    rows = ["Time,Series,Value"]
    for line in (SAMPLES / "grafana_table.md").read_text().splitlines()[2:]:
        series, value = (c.strip() for c in line.strip("| ").split("|"))
        rows.append(f'2025-06-01 10:00:00,"{series.replace(chr(34), chr(34) * 2)}",{value}')
    csv = tmp_path / "export.csv"
    csv.write_text("\n".join(rows) + "\n")
    np.testing.assert_allclose(read_acceptance([csv]).rates, A_RATES)
    units = tmp_path / "units.md"
    units.write_text((SAMPLES / "grafana_table.md").read_text().replace("| 2000  |", "| 2.00 K |"))
    with pytest.raises(InputError, match=r"units.md:3: .*rounded to display units"):
        read_acceptance([units])


def test_sglang_bench_serving_accept_length(tmp_path):
    path = tmp_path / "bench.txt"
    path.write_text(
        "============ Serving Benchmark Result ============\nBackend:   sglang\nAccept length:   3.21\n"
    )
    with pytest.raises(InputError, match="bench.txt:3: .*SGLang log carries τ = 3.210"):
        read_acceptance([path])
    assert read_acceptance([path], tau_only=True, k=4).tau == pytest.approx(3.21)


def test_browser_copy_puts_each_value_below_its_series(tmp_path):
    path = tmp_path / "copied.txt"
    rows = (SAMPLES / "prom_ui_table.txt").read_text().splitlines()[1:]
    path.write_text("".join(f"{series}\n{value}\n" for series, value in (r.split("\t") for r in rows)))
    np.testing.assert_allclose(read_acceptance([path]).rates, A_RATES)

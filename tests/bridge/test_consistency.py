"""No silent partial read: every figure that cannot be right is refused in one line naming file and line —
per-position series not covering the drafts counter's engines, counts above the drafts, a K that disagrees
with the positions, cumulative counters going backwards, positions missing from a log line or report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.acceptance import read_acceptance
from specsched.io.errors import InputError

SAMPLES = Path(__file__).parent / "vllm_samples"


def refused(tmp_path, name: str, text: str, pattern: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=pattern) as err:
        read_acceptance([path])
    msg = str(err.value)
    assert name in msg and "\n" not in msg
    return msg


def test_per_position_covering_one_engine_of_eight_is_refused():
    with pytest.raises(InputError, match=r'missing for engine="1".*8 series.*partial scrape'):
        read_acceptance([SAMPLES / "prom_partial_engines.txt"])


def prom(drafts=2000, tokens=6000, per_pos=(1668, 1258, 931), accepted=None, engine="0") -> str:
    lab = f'engine="{engine}",model_name="m"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{lab}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {tokens}",
    ]
    if accepted is not None:
        lines.append(f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted}")
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{i}"}} {a}'
        for i, a in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"


def test_prometheus_k_and_totals_disagreeing(tmp_path):
    # the server ran K = 5 but only position 0 was scraped: 5 drafted tokens per draft > 1 position
    refused(tmp_path, "k.txt", prom(tokens=10000, per_pos=(1668,)), r"num_draft_tokens_total.*K disagrees")
    refused(tmp_path, "sum.txt", prom(accepted=5000), r"num_accepted_tokens_total.*sum to 3857 but 5000")
    refused(tmp_path, "above.txt", prom(per_pos=(2100, 1000)), r'position="0".*above the number of drafts')
    twice = prom() + 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 2500\n'
    refused(tmp_path, "twice.txt", twice, r"twice.txt:6: .*appears twice with different values")
    extra = (
        prom()
        + 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 3\n'
    )
    refused(tmp_path, "extra.txt", extra, r'extra.txt:6: .*engine="1".*drafts counter lacks')
    uneven = prom() + prom(per_pos=(10, 5), engine="1")
    refused(
        tmp_path, "uneven.txt", uneven, r'engine="1".*position="2".*has 2 positions but another engine has 3'
    )


def test_prometheus_pair_counter_going_backwards(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(prom())
    b.write_text(prom(drafts=1500))
    with pytest.raises(InputError, match=r"b.txt:1: .*fell from 2000 to 1500"):
        read_acceptance([a, b])


LINE = (
    "INFO [metrics.py:98] SpecDecoding metrics: Mean acceptance length: {mal}, Accepted: {acc} tokens, "
    "Drafted: {dr} tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: 64.3%\n"
)


def test_log_line_with_positions_missing(tmp_path):
    # K = 3 really (drafted 6000 for 2000 drafts) but the rates list was cut to one position
    refused(
        tmp_path,
        "cut.log",
        LINE.format(mal="2.93", acc=3857, dr=6000, rates="0.834"),
        r"cut.log:1: field 'Drafted'.*K disagrees",
    )
    # drafted tokens fit, but 1 + Σ rates is far from the printed mean acceptance length
    refused(
        tmp_path,
        "mal.log",
        LINE.format(mal="3.50", acc=3857, dr=3000, rates="0.834, 0.629, 0.466"),
        r"mal.log:1: field 'Mean acceptance length'.*positions missing",
    )
    old = (
        "SpecDecoding metrics: Draft acceptance rate: 60.0%, Mean acceptance length: 2.20, "
        "Accepted: 120 tokens, Drafted: 200 tokens\n"
    )
    mixed = LINE.format(mal="2.93", acc=3857, dr=6000, rates="0.834, 0.629, 0.466") + old
    refused(tmp_path, "mixed.log", mixed, r"mixed.log:2: .*no per-position rates but other lines have")


def test_v0_counters_going_backwards(tmp_path):
    text = (SAMPLES / "v0_0_6_draft_model.log").read_text().splitlines()
    restarted = "\n".join([*text, text[1]]) + "\n"
    refused(
        tmp_path, "v0.log", restarted, r"v0.log:5: field 'Number of accepted tokens'.*fell from 3700.*restart"
    )
    bad_k = text[1].replace("Number of speculative tokens: 4", "Number of speculative tokens: 1")
    refused(tmp_path, "v0k.log", bad_k + "\n", r"v0k.log:1: field 'Number of emitted tokens'.*K disagrees")


def test_per_request_histogram_checks(tmp_path):
    good = {
        "acceptance_histogram": [100, 150, 100, 350],
        "num_spec_tokens": 3,
        "num_spec_steps": 700,
        "num_accepted_draft_tokens": 1400,
        "num_draft_tokens": 2100,
    }
    for name, change, pattern in (
        ("k.json", {"num_spec_tokens": 5}, r"has 4 buckets but num_spec_tokens = 5 needs 6: K disagrees"),
        ("steps.json", {"num_spec_steps": 699}, r"num_spec_steps.*histogram gives 700"),
        ("acc.json", {"num_accepted_draft_tokens": 1300}, r"num_accepted_draft_tokens.*histogram gives 1400"),
        ("tok.json", {"num_draft_tokens": 2200}, r"num_draft_tokens.*K × steps"),
        ("null.json", {"acceptance_histogram": None}, r"acceptance_histogram.*list of counts"),
    ):
        refused(
            tmp_path, name, json.dumps({"metrics": {"speculative_decoding": {**good, **change}}}), pattern
        )
    refused(
        tmp_path,
        "alln.json",
        json.dumps([{"metrics": {"speculative_decoding": None}}]),
        r"no per-request acceptance \(1 null",
    )


def test_console_report_inconsistent(tmp_path):
    text = (SAMPLES / "bench_console.txt").read_text()
    refused(
        tmp_path,
        "cut.txt",
        text.replace("  Position 2:                            46.55\n", ""),
        r"cut.txt:\d+: .*K disagrees",
    )
    refused(tmp_path, "sum.txt", text.replace("3857", "4100"), r"sum.txt:\d+: .*sum to 1.9285 but accepted")
    refused(tmp_path, "gap.txt", text.replace("Position 1:", "Position 7:"), r"missing position 1")


def test_prometheus_without_per_position_is_tau_only(tmp_path):
    path = tmp_path / "old.txt"
    path.write_text(prom(per_pos=(), accepted=3857))
    with pytest.raises(InputError, match=r"old.txt: .*a Prometheus scrape carries τ = 2.929 only"):
        read_acceptance([path])
    acc = read_acceptance([path], tau_only=True)
    assert acc.per_pos.size == 3 and acc.tau == pytest.approx(1 + 3857 / 2000)


def test_quoted_paste_and_partial_first_scrape(tmp_path):
    quoted = tmp_path / "quoted.md"
    body = "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n" + prom()
    quoted.write_text("".join(f"> {x}\n" for x in body.splitlines()))
    assert read_acceptance([quoted]).drafts == 2000
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(prom(per_pos=()))  # the first scrape lacks the per-position counter of engine 0
    b.write_text(prom(drafts=4000, tokens=12000))
    with pytest.raises(InputError, match=r"b.txt:3: .*position=\"0\".*first scrape is partial"):
        read_acceptance([a, b])

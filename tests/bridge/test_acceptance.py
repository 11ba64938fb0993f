"""vLLM acceptance inputs → per-position counts: round trips for Prometheus (cumulative, before/after pairs,
several engines), logs (old and new field orders, CRLF, idle intervals) and bench JSON; bad input is one
InputError naming the file and field (zero drafts, a rising rate, a missing position, a counter reset)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bridge.acceptance import read_acceptance
from specsched.io.errors import InputError

DRAFTS = 1000
PER_POS = np.array([800.0, 560.0, 392.0, 274.0])  # drafts with ≥ i + 1 accepted
TAU = 1 + PER_POS.sum() / DRAFTS


def prom_text(drafts_by_engine, per_pos_by_engine, model="m") -> str:
    lines = [
        "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts_total counter",
    ]
    for e, d in enumerate(drafts_by_engine):
        lines.append(f'vllm:spec_decode_num_drafts_total{{engine="{e}",model_name="{model}"}} {d}')
        lines.append(f'vllm:spec_decode_num_drafts_created{{engine="{e}",model_name="{model}"}} 1.7e9')
        lines.append(f'vllm:spec_decode_num_draft_tokens_total{{engine="{e}",model_name="{model}"}} {d * 4}')
    for e, per in enumerate(per_pos_by_engine):
        for i, a in enumerate(per):
            lines.append(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{e}",model_name="{model}",'
                f'position="{i}"}} {a}'
            )
    lines.append('vllm:num_requests_running{engine="0",model_name="m"} 3.0')
    return "\n".join(lines) + "\n"


def write(tmp_path, name, text, newline="\n"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode())
    return str(path)


def check(acc, drafts=DRAFTS, per_pos=PER_POS, tol=1e-9):
    assert acc.drafts == pytest.approx(drafts, rel=tol)
    np.testing.assert_allclose(acc.per_pos, per_pos, rtol=tol)
    assert acc.tau == pytest.approx(1 + per_pos.sum() / drafts, rel=tol)
    cond = acc.conditional()
    np.testing.assert_allclose(np.cumprod(cond) * drafts, per_pos, rtol=tol)


def test_prometheus_cumulative_sums_engines(tmp_path):
    text = prom_text([600, 400], [PER_POS * 0.6, PER_POS * 0.4])
    check(read_acceptance([write(tmp_path, "m.txt", text)]))


def test_prometheus_pair_uses_the_difference(tmp_path):
    before = prom_text([100, 50], [[90, 70, 50, 30], [40, 30, 20, 10]])
    after = prom_text(
        [100 + 600, 50 + 400],
        [np.array([90, 70, 50, 30]) + PER_POS * 0.6, np.array([40, 30, 20, 10]) + PER_POS * 0.4],
    )
    acc = read_acceptance([write(tmp_path, "a.txt", before), write(tmp_path, "b.txt", after, "\r\n")])
    check(acc)
    assert acc.kind == "prometheus pair"


def test_prometheus_reset_between_scrapes_is_refused(tmp_path):
    before = prom_text([700, 500], [PER_POS * 0.7, PER_POS * 0.5])
    after = prom_text([800, 10], [PER_POS * 0.8, PER_POS * 0.01])  # engine 1 restarted
    a, b = write(tmp_path, "a.txt", before), write(tmp_path, "b.txt", after)
    with pytest.raises(InputError) as err:
        read_acceptance([a, b])
    msg = str(err.value)
    assert "b.txt" in msg and 'engine="1"' in msg and "restart" in msg and "\n" not in msg


def test_prometheus_missing_position_and_zero_drafts(tmp_path):
    text = prom_text([DRAFTS], [PER_POS]).replace('position="2"', 'position="5"')
    with pytest.raises(InputError, match=r'position="2".*missing position 2'):
        read_acceptance([write(tmp_path, "m.txt", text)])
    with pytest.raises(InputError, match="num_drafts_total.*zero drafts"):
        read_acceptance([write(tmp_path, "z.txt", prom_text([0], [[0, 0]]))])
    rising = prom_text([DRAFTS], [[500, 600, 100]])
    with pytest.raises(InputError, match=r'm2.txt.*position="1".*above'):
        read_acceptance([write(tmp_path, "m2.txt", rising)])


NEW = (
    "INFO 11-30 10:00:{s:02d} [metrics.py:98] SpecDecoding metrics: Mean acceptance length: {mal:.2f}, "
    "Accepted throughput: 12.30 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {acc} tokens, "
    "Drafted: {dr} tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {pct:.1f}%"
)
OLD = (
    "INFO 06-06 14:20:{s:02d} [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: {pct:.1f}%, "
    "Mean acceptance length: {mal:.2f}, Accepted: {acc} tokens, Drafted: {dr} tokens, "
    "Per-position acceptance rate: {rates}"
)


def log_line(fmt, s, drafts, per_pos):
    rates = per_pos / drafts
    acc = int(per_pos.sum())
    k = per_pos.size
    return fmt.format(
        s=s,
        mal=1 + acc / drafts,
        acc=acc,
        dr=drafts * k,
        rates=", ".join(f"{r:.3f}" for r in rates),
        pct=100 * acc / (drafts * k),
    )


@pytest.mark.parametrize("fmt", [NEW, OLD], ids=["new-order", "old-order"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_log_round_trip(tmp_path, fmt, newline):
    lines = [
        "INFO Engine 000: Avg prompt throughput: 0.0 tokens/s, Running: 0 reqs",
        log_line(fmt, 1, 600, PER_POS * 0.6),
        "INFO 11-30 [metrics.py:98] SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, "
        "Drafted: 0 tokens",
        log_line(fmt, 2, 400, PER_POS * 0.4),
    ]
    acc = read_acceptance([write(tmp_path, "vllm.log", "\n".join(lines) + "\n", newline)])
    check(acc, tol=2e-3)  # vLLM prints rates to 3 decimals


def test_logs_pool_weighted_by_drafts(tmp_path):
    a = write(tmp_path, "a.log", log_line(NEW, 1, 900, np.array([900.0, 450.0])) + "\n")
    b = write(tmp_path, "b.log", log_line(OLD, 1, 100, np.array([0.0, 0.0])) + "\n")
    acc = read_acceptance([a, b])
    np.testing.assert_allclose(acc.rates, [0.9, 0.45])
    assert acc.tau == pytest.approx(2.35)


def test_log_bad_input(tmp_path):
    short = log_line(NEW, 1, 100, np.array([80.0, 60.0, 40.0]))
    with pytest.raises(
        InputError, match=r"x.log:2: field 'Per-position acceptance rate\[2\]'.*missing position"
    ):
        read_acceptance(
            [
                write(
                    tmp_path,
                    "x.log",
                    log_line(NEW, 0, 100, PER_POS[:3] / 10) + "\n" + short.replace(", 0.400", ""),
                )
            ]
        )
    rising = log_line(NEW, 1, 100, np.array([50.0, 70.0]))
    with pytest.raises(InputError, match=r"y.log:1: field 'Per-position acceptance rate\[1\]'.*above"):
        read_acceptance([write(tmp_path, "y.log", rising)])
    idle = "SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens\n"
    with pytest.raises(InputError, match="z.log.*zero drafts"):
        read_acceptance([write(tmp_path, "z.log", idle)])
    with pytest.raises(InputError, match="w.log:1: field 'Drafted'"):
        read_acceptance([write(tmp_path, "w.log", "SpecDecoding metrics: Accepted: 3 tokens\n")])


def test_bench_json_round_trip_and_pooling(tmp_path):
    doc = {
        "spec_decode_num_drafts": DRAFTS,
        "spec_decode_per_position_acceptance_rates": list(PER_POS / DRAFTS),
    }
    check(read_acceptance([write(tmp_path, "r.json", json.dumps(doc))]))
    half = dict(doc, spec_decode_num_drafts=DRAFTS // 2)
    acc = read_acceptance(
        [write(tmp_path, "h1.json", json.dumps(half)), write(tmp_path, "h2.json", json.dumps(half))]
    )
    check(acc)


def test_bench_json_bad_input(tmp_path):
    base = {"spec_decode_num_drafts": 10, "spec_decode_per_position_acceptance_rates": [0.8, 0.5]}
    cases = [
        (dict(base, spec_decode_num_drafts=0), "spec_decode_num_drafts.*zero drafts"),
        (dict(base, spec_decode_per_position_acceptance_rates=[0.8, None]), r"rates\[1\].*missing position"),
        (dict(base, spec_decode_per_position_acceptance_rates=[0.5, 0.8]), r"rates\[1\].*above"),
        ({"completed": 3}, "spec_decode_num_drafts.*missing"),
    ]
    for i, (doc, pattern) in enumerate(cases):
        with pytest.raises(InputError, match=pattern):
            read_acceptance([write(tmp_path, f"b{i}.json", json.dumps(doc))])


def test_unknown_or_mixed_kinds_are_refused(tmp_path):
    with pytest.raises(InputError, match="neither"):
        read_acceptance([write(tmp_path, "n.txt", "hello\n")])
    prom = write(tmp_path, "p.txt", prom_text([DRAFTS], [PER_POS]))
    log = write(tmp_path, "l.log", log_line(NEW, 1, 100, PER_POS / 10) + "\n")
    with pytest.raises(InputError, match="one kind"):
        read_acceptance([prom, log])
    with pytest.raises(InputError, match="cannot read"):
        read_acceptance([str(tmp_path / "missing.txt")])

"""Issue 36's open fuzz items, fixed in the readers and parsers, as fast regression tests: every numeric
field of a reader is bounded (trace arrival times, inference-perf stages, bench-file lists, runs.csv
latencies), every numeric flag is an argparse `bounded` type, a malformed CSV row or a filter flag is
named, and no `inf` reaches a table. Each case is one stderr line, exit 2, naming the file or the flag.

May import: pytest, the standard library, specbed, tests.fuzz.
"""

from __future__ import annotations

import json

import pytest

from tests.fuzz import kinds
from tests.fuzz.test_cli_fixes import _one_line as one_line

TRACE = b"arrival_s,input_tokens,output_tokens\n0,10,5\n0.5,12,6\n1.0,9,4\n1.5,11,7\n"


def _one_line(capsys, argv, *words) -> str:
    return one_line(capsys, [str(a) for a in argv], *words)


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(TRACE)
    return path


FILTERS = [("--log-type", ""), ("--log-type", "api"), ("--model", "GPT-4")]
SHAPING = [("--scale", "0"), ("--scale", "-1"), ("--max-context", "1" * 40), ("--max-context", "nan")]


@pytest.mark.parametrize(
    "cmd, flag, value",
    [
        (c, f, v)
        for c in ("stats", "convert", "synth")
        for f, v in FILTERS + (SHAPING if c != "synth" else [])
    ],
)
def test_trace_flags_are_named(cmd, flag, value, trace, tmp_path, capsys):
    out = {"stats": [], "convert": ["--out", tmp_path / "o.csv"]}.get(
        cmd, ["--out", tmp_path / "o.csv", "--n", "5"]
    )
    _one_line(capsys, ["trace", cmd, trace, flag, value, *out], flag)
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("seed", ["-1", "1" * 40])
def test_trace_synth_seed_is_bounded(seed, trace, tmp_path, capsys):
    _one_line(
        capsys, ["trace", "synth", trace, "--n", "5", "--seed", seed, "--out", tmp_path / "o.csv"], "--seed"
    )


def test_an_arrival_time_past_the_span_names_file_row_and_field(tmp_path, capsys):
    bad = tmp_path / "far.csv"
    bad.write_bytes(TRACE.replace(b"\n1.0,9,4", b"\n1e308,9,4"))
    for argv in (["trace", "synth", bad, "--n", "5", "--out", tmp_path / "o.csv"], ["trace", "stats", bad]):
        _one_line(capsys, argv, "far.csv", "arrival_s", "row 3")
    argv = ["run", "--quiet", "--set", "workload.kind=trace", "--set", f"workload.trace={bad}",
            "--out", tmp_path / "run"]  # fmt: skip
    _one_line(capsys, argv, "far.csv", "arrival_s")


def test_trace_synth_on_too_few_requests_names_the_trace(tmp_path, capsys):
    zero = tmp_path / "z.csv"
    zero.write_bytes(TRACE.replace(b"\n1.0,9,4", b"\n1.0,9,0").replace(b"\n1.5,11,7", b"\n1.5,11,0"))
    _one_line(capsys, ["trace", "synth", zero, "--n", "5", "--out", tmp_path / "o.csv"], "z.csv")


@pytest.fixture
def vllm_inputs(tmp_path):
    runs, workloads = tmp_path / "runs.csv", tmp_path / "workloads.json"
    runs.write_bytes(kinds.SEEDS["runs"]()[1])
    workloads.write_bytes(kinds.SEEDS["workloads"]()[1])
    return runs, workloads


def _cell(runs, column: str, value: str) -> None:
    lines = runs.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index(column)] = value
    runs.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")


def _validate(runs, workloads, tmp_path, *extra):
    return ["validate", runs, "--workloads", workloads, "--out", tmp_path / "out", *extra]


def _calibrate(runs, workloads, tmp_path, *extra):
    out = ["--gpu", "h100", "--out", tmp_path / "k.json"]
    return ["cost", "calibrate", runs, "--workloads", workloads, *out, *extra]


@pytest.mark.parametrize("where", ["row", "header"])
def test_a_huge_runs_cell_is_one_line(where, vllm_inputs, tmp_path, capsys):
    runs, workloads = vllm_inputs
    if where == "row":
        _cell(runs, "folder", "x" * (3 << 20))
    else:
        runs.write_text("x" * (3 << 20) + "," + runs.read_text())
    line = "runs.csv:2" if where == "row" else "runs.csv:1"
    _one_line(capsys, _validate(runs, workloads, tmp_path), line)
    _one_line(capsys, _calibrate(runs, workloads, tmp_path), line)


@pytest.mark.parametrize("column", ["actual_e2e_p90", "actual_itl_mean"])
def test_a_zero_latency_is_refused_naming_the_field(column, vllm_inputs, tmp_path, capsys):
    runs, workloads = vllm_inputs
    _cell(runs, column, "0")
    _one_line(capsys, _validate(runs, workloads, tmp_path), "runs.csv:2", column)


@pytest.mark.parametrize("field, value", [("rate", 1e308), ("duration", 1e308)])
def test_a_workloads_stage_number_is_bounded(field, value, vllm_inputs, tmp_path, capsys):
    runs, workloads = vllm_inputs
    doc = json.loads(workloads.read_text())
    first = next(iter(doc["workloads"]))
    doc["workloads"][first]["stages"][0][field] = value
    workloads.write_text(json.dumps(doc))
    _one_line(capsys, _validate(runs, workloads, tmp_path), "workloads.json", field)


@pytest.mark.parametrize(
    "flag, value",
    [("--seed", "-1"), ("--max-num-seqs", "0"), ("--max-num-seqs", "-1"), ("--max-num-seqs", "1e40"),
     ("--max-num-seqs", "1" * 40), ("--max-model-len", "1" * 40), ("--max-model-len", "0")],
)  # fmt: skip
@pytest.mark.parametrize("command", ["validate", "calibrate"])
def test_validate_and_calibrate_flags_are_named(command, flag, value, vllm_inputs, tmp_path, capsys):
    build = _validate if command == "validate" else _calibrate
    _one_line(capsys, build(*vllm_inputs, tmp_path, flag, value), flag)


def test_a_bench_itl_of_1e308_is_one_line(tmp_path, capsys):
    doc = json.loads(kinds.SEEDS["bench-detailed"]()[1])
    doc["itls"][0][0] = 1e308
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps(doc))
    _one_line(capsys, ["validate", bench, "--model", "llama3.1-8b"], "b.json", "itls")


def test_calibrate_knobs_out_of_bounds_name_the_runs_file(tmp_path, capsys, monkeypatch):
    """Runs whose times are 1000× off fit a knob past its bound: the runs file is named, with the cause."""
    from specsched.io.errors import InputError
    from validate import calibrate as cal

    def off(*args, **kwargs):
        raise InputError("must be in [0, 10), got 12.0", field="knobs.frontend_s")

    monkeypatch.setattr(cal, "calibrate", off)
    runs, workloads = tmp_path / "all.csv", tmp_path / "w.json"
    runs.write_bytes(kinds.SEEDS["runs-all"]()[1])
    workloads.write_bytes(kinds.SEEDS["workloads"]()[1])
    _one_line(capsys, _calibrate(runs, workloads, tmp_path), "all.csv", "knobs.frontend_s", "milliseconds")

"""`specbed trace stats | convert | synth` through the real console-script dispatcher."""

from __future__ import annotations

import json
import sys

import pytest

import traces
from specbed.cli import main
from traces import export

from .conftest import BURSTGPT_V1

STATS_KEYS = {
    "format",
    "requests",
    "duration_s",
    "rate_per_s",
    "interarrival_cv",
    "input_tokens_total",
    "output_tokens_total",
    "input_tokens_mean",
    "output_tokens_mean",
    "input_tokens_p99",
    "output_tokens_p99",
    "dropped_rows",
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["trace", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("specbed trace: error: ")
    return lines[0]


def test_stats_prints_json(capsys):
    code, out, err = run(capsys, "stats", "azure2023-conv")
    assert code == 0 and err == ""
    stats = json.loads(out)
    assert STATS_KEYS <= set(stats) and stats["requests"] == 19366 and stats["format"] == "azure"


def test_stats_with_filters_and_shaping(capsys, write):
    path = write("b.csv", BURSTGPT_V1)
    code, out, _ = run(
        capsys, "stats", str(path), "--format", "burstgpt", "--model", "ChatGPT", "--keep-failed"
    )
    assert code == 0 and json.loads(out)["requests"] == 3
    code, out, _ = run(
        capsys, "stats", "azure2023-code", "--window", "0:600", "--scale", "2", "--max-context", "4096"
    )
    s = json.loads(out)
    assert code == 0 and s["duration_s"] <= 300 and s["input_tokens_mean"] + s["output_tokens_mean"] <= 4096


def test_stats_with_column_mapping(capsys, write):
    path = write("g.csv.gz", "t,p,o\n0,5,1\n250,6,2\n", gz=True)
    code, out, _ = run(capsys, "stats", str(path), "--columns", "arrival=t,input=p,output=o,time_unit=ms")
    assert code == 0 and json.loads(out)["duration_s"] == 0.25


def test_convert_csv_roundtrip(capsys, tmp_path):
    out_path = tmp_path / "conv.csv"
    code, out, _ = run(capsys, "convert", "azure2023-conv", "--out", str(out_path))
    assert code == 0 and "wrote 19366 requests" in out
    back = traces.load(out_path)
    assert len(back) == 19366 and back.meta["format"] == "specbed"
    assert set(back.domain.tolist()) == {"chat"}
    assert [p.name for p in tmp_path.iterdir()] == ["conv.csv"]  # no temporary file left behind


def test_convert_parquet(capsys, tmp_path):
    pytest.importorskip("pyarrow")
    code, _, _ = run(capsys, "convert", "azure2023-code", "--out", str(tmp_path / "code.parquet"))
    assert code == 0 and len(traces.load(tmp_path / "code.parquet")) == 8819


def test_parquet_without_pyarrow_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    code, _, err = run(capsys, "convert", "azure2023-code", "--out", str(tmp_path / "code.parquet"))
    assert code == 2 and "needs pyarrow" in one_line_error(err)
    assert not list(tmp_path.iterdir())


def test_failed_convert_leaves_existing_output_untouched(capsys, tmp_path, write, monkeypatch):
    out_path = tmp_path / "out.csv"
    out_path.write_text("earlier result\n")
    bad = write("bad.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n1,x,1\n")
    code, _, err = run(capsys, "convert", str(bad), "--out", str(out_path))
    assert code == 2 and "bad.csv:3: field 'num_prefill_tokens'" in one_line_error(err)
    assert out_path.read_text() == "earlier result\n"

    def crash(table, binary):  # fail in the middle of writing
        binary.write(b"arrival_s,input")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export, "_write_csv", crash)
    code, _, err = run(capsys, "convert", "azure2023-code", "--out", str(out_path))
    assert code == 2 and "no space left on device" in one_line_error(err) and "intact" in err
    assert out_path.read_text() == "earlier result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "out.csv"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "the following arguments are required"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["stats"], "the following arguments are required: FILE"),
        (["stats", "azure2023-code", "--bogus"], "unrecognized arguments: --bogus"),
        (["stats", "azure2023-code", "--format", "xml"], "argument --format: invalid choice"),
        (["stats", "azure2023-code", "--columns", "nonsense"], "expected KEY=NAME pairs"),
        (["stats", "azure2023-code", "--window", "a:b"], "expected START:END"),
        (["convert", "azure2023-code"], "the following arguments are required: --out"),
        (["convert", "azure2023-code", "--out", "x.txt"], "output must end in .csv, .csv.gz or .parquet"),
        (["synth", "azure2023-code", "--n", "ten", "--out", "x.csv"], "argument --n: invalid int value"),
        (["synth", "azure2023-code", "--n", "0", "--out", "x.csv"], "field '--n': must be > 0"),
        (["synth", "azure2023-code", "--n", "5", "--rate", "-1", "--out", "x.csv"], "rate must be"),
        (["stats", "missing.csv"], "missing.csv: field 'trace': no such file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, tmp_path, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert words in one_line_error(err)


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "stats" in out and "convert" in out and "synth" in out


def test_unsorted_warning_is_one_stderr_line(capsys, write):
    path = write("v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n2,1,1\n1,1,1\n")
    code, out, err = run(capsys, "stats", str(path))
    assert code == 0 and json.loads(out)["moved_rows"] == 2
    assert err.count("\n") == 1 and err.startswith("specbed trace: warning: ") and "out of time order" in err


def test_synth_is_seeded(capsys, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (a, b):
        code, out, _ = run(
            capsys,
            "synth",
            "azure2023-conv",
            "--n",
            "2000",
            "--rate",
            "30",
            "--seed",
            "4",
            "--out",
            str(path),
        )
        assert code == 0
    summary = json.loads(out)
    assert summary["requests"] == 2000 and summary["fit"]["pairs"] == 19366
    assert a.read_bytes() == b.read_bytes()
    t = traces.load(a)
    assert len(t) == 2000 and t.rate_per_s == pytest.approx(30, rel=0.1)

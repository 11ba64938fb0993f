"""Issue 36 item 3: a trace's hash_ids stay consistent with its prompt lengths through every command
(`convert --max-context`, `synth`), a named column must exist, and a short trace asked for more says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specbed.cli import main
from traces import synthetic, transform
from traces.table import RequestTable


def _mooncake(path, n=6, prompt=1500):
    rows = [{"timestamp": i * 100, "input_length": prompt, "output_length": 20, "hash_ids": [1, 2, 3]}
            for i in range(n)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _table():
    hashes = (np.array([1, 2, 3]), np.array([1, 2, 3]), np.array([7]))
    return RequestTable([0.0, 1.0, 2.0], [1500, 1500, 100], [20, 20, 20], hash_ids=hashes)


def test_clip_keeps_only_the_blocks_a_shortened_prompt_holds():
    out = transform.clip(_table(), 600)
    assert out.input_tokens.tolist() == [580, 580, 100]
    assert [h.tolist() for h in out.hash_ids] == [[1, 2], [1, 2], [7]]  # ⌈580 / 512⌉ = 2 blocks
    small = transform.clip(_table(), 600, hash_block_tokens=64)
    assert [len(h) for h in small.hash_ids] == [3, 3, 1]  # a list shorter than the prompt's blocks stays


def test_synth_keeps_hash_ids_with_their_prompt():
    model = synthetic.fit(_table())
    out = model.generate(50, np.random.default_rng(0))
    assert out.hash_ids is not None and len(out.hash_ids) == 50
    for n, h in zip(out.input_tokens.tolist(), out.hash_ids, strict=True):
        assert h.tolist() == ([1, 2, 3] if n == 1500 else [7])


def test_convert_max_context_and_synth_write_consistent_hash_ids(tmp_path):
    src = _mooncake(tmp_path / "m.jsonl")
    assert main(["trace", "convert", src, "--max-context", "600", "--out", str(tmp_path / "c.csv")]) == 0
    rows = (tmp_path / "c.csv").read_text().splitlines()
    assert rows[0].endswith("hash_ids") and rows[1].endswith(",580,20,1 2")
    assert main(["trace", "synth", src, "--n", "4", "--out", str(tmp_path / "s.csv")]) == 0
    assert (tmp_path / "s.csv").read_text().splitlines()[1].endswith(",1500,20,1 2 3")


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_named_hash_ids_column_that_is_missing_is_refused(kind, tmp_path, capsys):
    if kind == "csv":
        (tmp_path / "t.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,20,5\n2,30,5\n")
        src, cols = str(tmp_path / "t.csv"), "arrival=arrival_s,input=input_tokens,output=output_tokens"
    else:
        src = _mooncake(tmp_path / "t.jsonl")
        cols = "arrival=timestamp,input=input_length,output=output_length,time_unit=ms"
    assert main(["trace", "stats", src, "--columns", cols + ",hash_ids=hid"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'hid'" in err[0] and "t." in err[0], err


def test_a_short_trace_asked_for_more_requests_warns(tmp_path, capsys):
    (tmp_path / "two.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,20,5\n")
    trace = f"workload.trace={tmp_path / 'two.csv'}"
    argv = [
        "run",
        "--quiet",
        "--set",
        "workload.kind=trace",
        "--set",
        trace,
        "--set",
        "workload.num_requests=50",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": warning: " in err[0] and "asks 50 requests of a trace of 2" in err[0], err


def test_a_bad_hash_block_size_is_refused_before_any_work(tmp_path, capsys):
    src = _mooncake(tmp_path / "m.jsonl")
    assert main(["trace", "convert", src, "--hash-block-tokens", "0", "--out", str(tmp_path / "c.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--hash-block-tokens" in err[0] and not (tmp_path / "c.csv").exists()

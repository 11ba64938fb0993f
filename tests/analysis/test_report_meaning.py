"""Issue 36 item 3: report and pareto read a sweep's cells strictly — a hand-edited metric that is not a
finite number of float range is one line naming the cell file and its column; a broken cell is said."""

from __future__ import annotations

import re
import shutil

import pytest

from specbed.cli import main

SWEEP = """name = "rm"
[base]
seed = 0
[base.workload]
kind = "closed"
num_requests = 20
concurrency = 2
[axes]
"seed" = [1, 2]
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    (root / "s.toml").write_text(SWEEP)
    assert main(["sweep", str(root / "s.toml"), "--out", str(root / "out"), "--quiet"]) == 0
    return root / "out"


def _edited(sweep, tmp_path, value: str):
    out = tmp_path / "out"
    shutil.copytree(sweep, out)
    cell = sorted((out / "cells").iterdir())[0]
    text = re.sub(
        r'"throughput_tok_s_per_gpu": [^,}]+', f'"throughput_tok_s_per_gpu": {value}', cell.read_text()
    )
    cell.write_text(text)
    return out, cell


@pytest.mark.parametrize("command", ["report", "pareto"])
@pytest.mark.parametrize("value", ["Infinity", "NaN", "1" + "0" * 400])
def test_a_hand_edited_metric_is_one_line_naming_file_and_column(sweep, tmp_path, capsys, command, value):
    out, cell = _edited(sweep, tmp_path, value)
    capsys.readouterr()
    assert main([command, str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and cell.name in err[0] and "summary.throughput_tok_s_per_gpu" in err[0], err


def test_a_truncated_cell_is_left_out_with_a_warning(sweep, tmp_path, capsys):
    out, cell = _edited(sweep, tmp_path, "1")
    cell.write_text(cell.read_text()[:40])
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": warning: " in err[0] and cell.name in err[0], err

"""One results writer (`specsched.io.results`): strict JSON everywhere, the resolved config beside results."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from specbed.cli import main as specbed
from specsched.io.results import dumps_json, plain, write_results

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("specbed", "specsched", "sim", "engine", "analysis", "paper_figs", "twin", "traces", "bridge")
PACKAGES += ("validate",)
WRITER = "specsched/io/results.py"
#: the other `json.dumps` calls, none of which writes a result: file -> (count, why)
NOT_RESULTS = {
    "sim/config_io.py": (1, "a TOML basic string is a JSON string: quoting a config value"),
    "analysis/sweepfile.py": (1, "the canonical text a sweep cell's key is hashed from"),
    "analysis/search/launch.py": (2, "vllm serve's --compilation-config / --speculative-config arguments"),
    "analysis/draft_schedule.py": (1, "vllm serve's --speculative-config argument"),
    "analysis/search/pools.py": (2, "deep copies of plain config dicts; a TOML value's text"),
    "analysis/search/halving.py": (1, "a deep copy of a plain config dict"),
    "paper_figs/vllm_adaptive.py": (3, "Python literals in a generated script"),
}
_CALL = re.compile(r"\bjson\.dumps?\(")


def test_one_json_writer():
    """Every JSON result goes through `specsched.io.results.dumps_json`; a second writer fails here."""
    found: dict[str, int] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            n = len(_CALL.findall(path.read_text()))
            if n and rel != WRITER:
                found[rel] = n
    allowed = {rel: n for rel, (n, _) in NOT_RESULTS.items()}
    assert found == allowed, (
        "write JSON results with specsched.io.results (dumps_json / write_json / write_results); "
        f"json.dump(s) calls per file: {found}, allowed: {allowed}"
    )


def _strict(text: str):
    """Parse JSON refusing the non-standard NaN / Infinity tokens Python's json accepts."""

    def refuse(token):
        raise AssertionError(f"bare {token} in a results file")

    return json.loads(text, parse_constant=refuse)


def test_dumps_json_is_strict():
    data = {"a": math.nan, "b": [np.float64("inf"), np.int64(3)], 4: np.array([1.5, np.nan]), "p": Path("x")}
    assert plain(data) == {"a": None, "b": [None, 3], "4": [1.5, None], "p": "x"}
    text = dumps_json(data)
    assert text.endswith("\n") and _strict(text) == {"4": [1.5, None], "a": None, "b": [None, 3], "p": "x"}
    assert dumps_json({"z": 1, "a": 2}, indent=None, sort_keys=False) == '{"z": 1, "a": 2}\n'


def test_write_results_writes_the_config_beside(tmp_path):
    write_results(tmp_path / "r", {"summary.json": {"x": math.nan}, "t.txt": "hi\n"}, config={"seed": 1})
    names = sorted(p.name for p in (tmp_path / "r").iterdir())
    assert names == [".job.json", "config.json", "summary.json", "t.txt"]
    assert _strict((tmp_path / "r" / "summary.json").read_text()) == {"x": None}
    write_results(tmp_path / "s", {"summary.json": {}}, config="seed = 1\n")
    assert (tmp_path / "s" / "config.toml").read_text() == "seed = 1\n"


RUN = ["--set", "workload.num_requests=40", "--set", "workload.rate=20"]
RUN += ["--set", "acceptance.sts_samples=256"]


def test_no_results_file_holds_a_bare_nan_and_every_folder_its_config(tmp_path, capsys):
    """The commands that write results, on small inputs whose summaries hold NaN (an empty SLO window,
    an undefined ECE): every JSON file parses strictly, and every results folder holds its config."""
    w = tmp_path
    assert specbed(["run", *RUN, "--out", str(w / "run"), "--quiet"]) == 0
    disagg = ["disagg", str(ROOT / "configs" / "disagg-small.toml"), "--set", "workload.num_requests=40"]
    assert specbed([*disagg, "--out", str(w / "dg"), "--json", str(w / "dg.json")]) == 0
    assert specbed(["export", str(w / "run"), "--out", str(w / "vllm.json")]) == 0
    capsys.readouterr()
    assert specbed([*disagg, "--json", "-"]) == 0
    printed = capsys.readouterr().out
    assert _strict(printed)["fleet"]
    files = [p for p in w.rglob("*") if p.suffix in (".json", ".jsonl")]
    assert len(files) >= 5
    for path in files:
        for line in path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]:
            _strict(line)
    for folder in (w / "run", w / "dg"):
        assert {"config.toml", "config.json"} & {p.name for p in folder.iterdir()}, folder


@pytest.mark.parametrize("nan", ["NaN", "Infinity", "-Infinity"])
def test_the_strict_reader_refuses_bare_tokens(nan):
    with pytest.raises(AssertionError):
        _strict(f'{{"x": {nan}}}')

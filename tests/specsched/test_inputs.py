"""specsched.io.inputs (the bounded, typed input layer) and the output rules added to specsched.io.safeio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specsched.io import inputs, safeio
from specsched.io.errors import InputError


def test_special_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    for path, word in ((fifo, "FIFO"), ("/dev/zero", "character device"), (tmp_path, "directory")):
        with pytest.raises(InputError, match=word) as err:
            inputs.load_json(path, what="curves file")
        assert str(path) in str(err.value)
    assert time.monotonic() - start < 5


def test_the_size_cap_is_named(tmp_path):
    path = tmp_path / "big.csv"
    path.write_bytes(b"x" * 3000)
    with pytest.raises(InputError, match=r"over the 2 KiB limit"):
        inputs.read_text(path, what="cost table", limit=2048)


def test_long_names_and_missing_files_are_one_line(tmp_path):
    for path in (tmp_path / ("a" * 300), tmp_path / "none.json", ""):
        with pytest.raises(InputError):
            inputs.load_json(path)


@pytest.mark.parametrize(
    "text, words",
    [
        ("[" * 5000, "nested"),
        ('{"a": ' + "1" * 400 + "}", "400 digits"),
        ('{"a": ' + "9" * 25 + "}", "64 bits"),
        ('{"a": [1, NaN]}', "a[1]"),
        ('{"a": {"b": 1e400}}', "a.b"),
        ('{"a": ', "not valid JSON"),
    ],
)
def test_json_limits(text, words, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(InputError, match=words.replace("[", r"\[")) as err:
        inputs.load_json(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, words",
    [("a = " + "[" * 5000, "nested"), ("a = " + "1" * 5000, "too many digits"), ("a = 9" + "9" * 20, "a")],
)
def test_toml_limits(text, words, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=words) as err:
        inputs.load_toml(path)
    assert str(path) in str(err.value)


def test_numbers_refuse_types_and_magnitudes():
    for bad in (None, [1], {"a": 1}, True, "x", "1" * 100, float("nan"), 1e301):
        with pytest.raises(InputError, match="field 'k'"):
            inputs.number(bad, file="f", field="k")
    assert inputs.number(" 4 ", integer=True) == 4
    with pytest.raises(InputError, match="outside"):
        inputs.number(5, lo=0, hi=1)


def test_reading_maps_every_failure_to_one_line_naming_the_file():
    for exc in (TypeError("x"), OverflowError("y"), KeyError("z"), RecursionError(), ValueError("v")):
        with pytest.raises(InputError, match=r"^f\.json: ") as err:
            with inputs.reading("f.json"):
                raise exc
        assert "\n" not in str(err.value)


def test_warnings_are_one_line_and_collected(capsys):
    with inputs.collect_warnings("specbed x") as notes:
        inputs.warn("odd", file="a.csv")
        inputs.warn("odd", file="a.csv")
    assert notes == ["a.csv: odd"]
    assert capsys.readouterr().err == "specbed x: warning: a.csv: odd\n"


# -- outputs ---------------------------------------------------------------------------------------------


def test_an_output_onto_an_input_or_a_result_file_is_refused(tmp_path):
    data = tmp_path / "m.csv"
    data.write_text("x\n")
    with pytest.raises(InputError, match="also an input"):
        safeio.check_file(data, inputs=[str(data)])
    run = tmp_path / "run"
    run.mkdir()
    for name in ("summary.json", "requests.csv"):
        (run / name).write_text("{}")
    sweep = tmp_path / "sw"
    (sweep / "cells").mkdir(parents=True)
    (sweep / "sweep.json").write_text("{}")
    for out in (run / "summary.json", run / "config.toml", sweep / "sweep.json", sweep / "cells" / "k.json"):
        with pytest.raises(InputError, match="results in"):
            safeio.check_file(out)
    safeio.check_file(sweep / "summary.md")  # a report beside the sweep is fine


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    pid = int(dead.stdout)
    old = time.time() - 3600
    names = [f".timeline.json.tmp-{pid}", f".tmp-summary.json.{pid}", f".tmp-x.{os.getpid()}", "keep.txt"]
    for name in names:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (old, old))
    safeio.check_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])


def test_the_folder_lock_refuses_a_second_holder(tmp_path):
    with safeio.held(tmp_path):
        assert not safeio.try_lock(tmp_path)
    assert safeio.try_lock(tmp_path)


def _bench(path: Path, rate: float) -> str:
    path.write_text(
        json.dumps({"spec_decode_num_drafts": 1000, "spec_decode_per_position_acceptance_rates": [rate]})
    )
    return str(path)


def test_concurrent_into_merges_lose_nothing(tmp_path):
    into = tmp_path / "c.json"
    base = [sys.executable, "-m", "specbed", "curves", "from-vllm"]
    first = subprocess.run([*base, _bench(tmp_path / "b.json", 0.5), "--drafter", "d0", "--domain", "chat",
                            "--out", str(into)], capture_output=True)  # fmt: skip
    assert first.returncode == 0, first.stderr
    procs = [
        subprocess.Popen(
            [
                *base,
                _bench(tmp_path / f"b{i}.json", 0.5),
                "--drafter",
                f"d{i}",
                "--domain",
                "chat",
                "--into",
                str(into),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for i in range(1, 4)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert set(json.loads(into.read_text())["curves"]) == {"d0", "d1", "d2", "d3"}

"""The bad-input contract, driven through every command in-process (`specbed.cli.main`).

For every bad input (the catalogue in tests/fuzz/cases.py, plus hypothesis-generated config values and
file bytes): exit code 2, exactly one stderr line naming the file / field / flag at fault, no traceback,
every file already in the workspace unchanged (nothing previously written is lost or touched), and a
bounded run time. Unwritable outputs use a `chattr +i` folder (root ignores chmod) where the platform
allows, else they are skipped; a full disk (ENOSPC) is simulated at the write itself.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specbed.cli import main
from tests.fuzz.cases import GOOD_CSV, GOOD_TOML, SWEEP, Case, all_cases
from tests.fuzz.workspace import build, snapshot

CASES = all_cases()
FAST_S = 20.0  # bound on one refused input (generous: 2 shared cores; the typical case takes ms)
SLOW_S = 60.0  # cases that import torch


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory) -> Path:
    """A small finished sweep folder (fake cell model), copied into each workspace as `done/`."""
    from analysis import run_sweep
    from analysis.sweepfile import parse_sweep
    from tests.analysis.conftest import SWEEP as ANALYSIS_SWEEP
    from tests.analysis.fake_model import MODEL

    root = tmp_path_factory.mktemp("done")
    sweep = parse_sweep(ANALYSIS_SWEEP, str(root / "s.toml"))
    run_sweep(sweep, root / "done", model=MODEL, jobs=1, progress=False)
    return root / "done"


def _workspace(root: Path, files: dict[str, bytes], done: Path | None, run: Path | None = None) -> Path:
    return build(root, files, done, run)


def expect_refused(argv, capsys, root: Path, expect=(), bound=FAST_S) -> str:
    """Run argv; assert the contract; return the stderr line."""
    before = snapshot(root)
    capsys.readouterr()
    start = time.monotonic()
    code = main(list(argv))
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, f"exit {code} for {argv}: {err[-800:]}"
    assert len(lines) == 1, f"{len(lines)} stderr lines for {argv}: {err[-800:]}"
    line = lines[0]
    assert line.startswith("specbed") and "error" in line and "Traceback" not in err, line
    for word in expect:
        assert word in line, f"{word!r} not named in: {line}"
    assert took < bound, f"took {took:.1f} s"
    assert snapshot(root) == before, f"the workspace changed: {argv}"
    return line


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """A small finished run folder (`specbed run --out`), copied into the workspaces that use `{W}/run`."""
    out = tmp_path_factory.mktemp("run") / "run"
    assert main(["run", "--quiet", "--set", "workload.num_requests=20", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_exit_2_nothing_changed(case: Case, tmp_path, capsys, finished_sweep, request):
    uses_run = any("{W}/run" in a for a in case.argv) or "@summary" in case.files
    run = request.getfixturevalue("finished_run") if uses_run else None
    done = finished_sweep if any("{W}/done" in a for a in case.argv) else None  # copied only where used
    root = _workspace(tmp_path, case.files, done, run)
    argv = [a.replace("{W}", str(root)) for a in case.argv]
    expect = [e.replace("{W}", str(root)) for e in case.expect]
    expect_refused(argv, capsys, root, expect, SLOW_S if case.slow else FAST_S)


def test_the_catalogue_holds_at_least_900_distinct_bad_inputs():
    assert len(CASES) >= 900, len(CASES)
    assert {c.category for c in CASES} >= {"config-set", "config-file", "cost-csv", "curves", "sweep-file"}
    assert {c.category for c in CASES} >= {"special", "numbers", "types", "onto", "long-name", "nonsense"}


# -- generated inputs --------------------------------------------------------------------------------------

_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)


def _numeric_keys():
    import typing

    from analysis.model import SimModel

    keys = []
    for key, tp in SimModel().schema().items():
        inner = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
        if inner[0] in (int, float):
            keys.append(key)
    return keys


@_SETTINGS
@given(
    key=st.sampled_from(_numeric_keys()),
    factor=st.floats(min_value=1.5, max_value=1e6),
)
def test_generated_values_above_every_bound_are_refused_naming_the_key(key, factor, capsys, tmp_path):
    from sim.bounds import DEFAULT_FLOAT_MAX, DEFAULT_INT_MAX, UPPER_BOUNDS

    bound = UPPER_BOUNDS.get(key, DEFAULT_FLOAT_MAX if key.endswith(("_s", "rate")) else DEFAULT_INT_MAX)
    value = int(bound * factor) + 1
    line = expect_refused(["run", "--quiet", "--set", f"{key}={value}"], capsys, tmp_path, [key])
    assert "≤" in line or "must be" in line


@_SETTINGS
@given(
    key=st.sampled_from(_numeric_keys()),
    text=st.text(min_size=1, max_size=12).filter(lambda s: not _is_number(s) and s.strip().lower() != "none"),
)
def test_generated_garbage_text_for_numeric_keys_is_refused(key, text, capsys, tmp_path):
    expect_refused(["run", "--quiet", "--set", f"{key}={text}"], capsys, tmp_path, [key])


def _is_number(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True


def _corrupt(data: bytes, how: str, pos: int, junk: bytes) -> bytes:
    i = pos % (len(data) + 1)
    return {
        "truncate": data[:i],
        "insert": data[:i] + junk + data[i:],
        "overwrite": data[:i] + junk + data[i + len(junk) :],
        "nul": data[:i] + b"\x00" + data[i:],
    }[how]


_CORRUPTION = st.tuples(
    st.sampled_from(("truncate", "insert", "overwrite", "nul")),
    st.integers(min_value=0, max_value=10_000),
    st.binary(min_size=1, max_size=8),
)


def _accepted_or_refused(argv, capsys, root: Path, name: str) -> None:
    """A corrupted file may still be valid input; if not, the contract holds."""
    before = {k: v for k, v in snapshot(root).items() if k.startswith("prev")}
    capsys.readouterr()
    code = main(list(argv))
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in (0, 2), err[-800:]
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and name in lines[0], err[-800:]
    assert {k: v for k, v in snapshot(root).items() if k.startswith("prev")} == before


@_SETTINGS
@given(corruption=_CORRUPTION)
def test_generated_cost_table_corruptions(corruption, capsys, tmp_path):
    (tmp_path / "t.csv").write_bytes(_corrupt(GOOD_CSV, *corruption))
    argv = ["run", "--quiet", "--set", "workload.num_requests=10", "--set", "cost.layers=32"]
    _accepted_or_refused([*argv, "--set", f"cost.table={tmp_path}/t.csv"], capsys, tmp_path, "t.csv")


@_SETTINGS
@given(corruption=_CORRUPTION)
def test_generated_config_file_corruptions(corruption, capsys, tmp_path):
    (tmp_path / "c.toml").write_bytes(_corrupt(GOOD_TOML, *corruption))
    argv = ["run", "--quiet", str(tmp_path / "c.toml"), "--set", "workload.num_requests=10"]
    _accepted_or_refused(argv, capsys, tmp_path, "c.toml")


@_SETTINGS
@given(corruption=_CORRUPTION)
def test_generated_sweep_file_corruptions(corruption, capsys, tmp_path):
    (tmp_path / "s.toml").write_bytes(_corrupt(SWEEP, *corruption))
    argv = ["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--model", FAKE, "--quiet"]
    out = tmp_path / "o"
    if out.exists():
        shutil.rmtree(out)
    _accepted_or_refused(argv, capsys, tmp_path, "s.toml")


FAKE = "tests.analysis.fake_model:MODEL"


# -- encodings that are not errors -------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["bom", "crlf", "bom+crlf"])
def test_bom_and_crlf_files_read_like_the_clean_ones(variant, tmp_path, capsys):
    def enc(data: bytes) -> bytes:
        if "crlf" in variant:
            data = data.replace(b"\n", b"\r\n")
        return (b"\xef\xbb\xbf" + data) if "bom" in variant else data

    (tmp_path / "c.toml").write_bytes(enc(GOOD_TOML))
    (tmp_path / "t.csv").write_bytes(enc(GOOD_CSV))
    (tmp_path / "s.toml").write_bytes(enc(SWEEP))
    from analysis.sweepfile import load_sweep
    from sim.config_io import load_config
    from specsched import load_cost

    assert load_config(tmp_path / "c.toml") == load_config(
        None, ["seed=1", "workload.kind=closed", "workload.num_requests=20", "workload.concurrency=4"]
    )
    assert load_cost(str(tmp_path / "t.csv")).tokens.tolist() == [1, 64, 512, 4096]
    assert load_sweep(tmp_path / "s.toml").name == "fz"


# -- unwritable and full outputs -----------------------------------------------------------------------------


@pytest.fixture
def immutable_dir(tmp_path):
    """A folder nobody (root included) can write into: `chattr +i`; skipped where unavailable."""
    folder = tmp_path / "frozen"
    folder.mkdir()
    (folder / "previous.txt").write_text("earlier result\n")
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        probe = folder / "probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("the immutable flag does not stop writes here")
        yield folder
    finally:
        subprocess.run([chattr, "-i", str(folder)], capture_output=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--quiet", "--set", "workload.num_requests=20", "--out", "{F}"],
        ["run", "--quiet", "--set", "workload.num_requests=20", "--out", "{F}/sub"],
        ["sweep", "{W}/s.toml", "--out", "{F}", "--model", FAKE],
        ["sweep", "{W}/s.toml", "--out", "{F}/sub", "--model", FAKE],
        ["pareto", "{W}/done", "--out", "{F}/p.png"],
        ["report", "{W}/done", "--out", "{F}/r.md"],
        ["trace", "synth", "azure2023-code", "--n", "5", "--out", "{F}/x.csv"],
        ["trace", "convert", "azure2023-code", "--out", "{F}/x.csv"],
    ],
    ids=["run", "run-sub", "sweep", "sweep-sub", "pareto", "report", "synth", "convert"],
)
def test_unwritable_output_is_refused_before_any_work(argv, immutable_dir, tmp_path, capsys, finished_sweep):
    root = _workspace(tmp_path / "w", {"s.toml": SWEEP}, finished_sweep)
    argv = [a.replace("{F}", str(immutable_dir)).replace("{W}", str(root)) for a in argv]
    line = expect_refused(argv, capsys, tmp_path, [str(immutable_dir)])
    assert "operation not permitted" in line or "permission denied" in line or "read-only" in line, line
    assert (immutable_dir / "previous.txt").read_text() == "earlier result\n"


def _full_disk(monkeypatch):
    """Every safeio write runs out of space half-way (ENOSPC), as on a full disk."""
    from specsched.io import safeio

    real = safeio._fill

    def fill(tmp, content, binary):
        real(tmp, b"partial" if binary else "partial", binary)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safeio, "_fill", fill)


@pytest.mark.parametrize("command", ["run", "report", "pareto", "synth"])
def test_full_disk_keeps_the_previous_results_and_says_so(
    command, tmp_path, capsys, monkeypatch, finished_sweep
):
    root = _workspace(tmp_path, {"prev/": b""}, finished_sweep)
    prev = root / "prev"
    argv = {
        "run": ["run", "--quiet", "--set", "workload.num_requests=20", "--out", str(prev)],
        "report": ["report", str(root / "done"), "--out", str(prev / "summary.md")],
        "pareto": ["pareto", str(root / "done"), "--out", str(prev / "pareto.png")],
        "synth": ["trace", "synth", "azure2023-code", "--n", "5", "--out", str(prev / "x.csv")],
    }[command]
    assert main(argv) == 0  # a first, good result
    capsys.readouterr()
    _full_disk(monkeypatch)
    before = snapshot(root)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left on device" in err[0] and "intact" in err[0], err
    assert snapshot(root) == before


def test_full_disk_during_a_sweep_loses_no_finished_cell(tmp_path, capsys, monkeypatch):
    (tmp_path / "s.toml").write_bytes(SWEEP)
    out = tmp_path / "o"
    argv = ["sweep", str(tmp_path / "s.toml"), "--out", str(out), "--model", FAKE, "--quiet", "--jobs", "1"]
    from analysis import store
    from specsched.io import safeio

    real, calls = safeio._fill, []

    def fill(tmp, content, binary):  # the disk fills up after the manifest and the first cell
        calls.append(tmp)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(tmp, content, binary)

    monkeypatch.setattr(safeio, "_fill", fill)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left" in err[0], err
    assert len(store.finished_keys(out)) == 1 and not list(out.rglob(".tmp-*"))
    monkeypatch.setattr(safeio, "_fill", real)
    assert main([*argv, "--resume"]) == 0
    assert "1 reused, 1 run" in capsys.readouterr().out


def test_full_disk_while_streaming_the_timeline_keeps_the_previous_run(tmp_path, capsys, monkeypatch):
    from sim.timeline import TimelineWriter

    prev = tmp_path / "prev"
    argv = ["run", "--quiet", "--set", "workload.num_requests=20", "--timeline", "--out", str(prev)]
    assert main(argv) == 0
    capsys.readouterr()
    before = snapshot(tmp_path)

    def full(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TimelineWriter, "_flush", full)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "timeline.json" in err[0] and "no space left" in err[0], err
    assert snapshot(tmp_path) == before  # no partial timeline, every earlier file unchanged


@pytest.fixture
def tiny_fs(tmp_path):
    """A real 2 MiB tmpfs (root only; skipped where mounting is not allowed), unmounted afterwards."""
    import os

    mnt = tmp_path / "tiny"
    mnt.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.parametrize("command", ["run", "report"])
def test_real_full_disk_keeps_the_previous_results(command, tiny_fs, tmp_path, capsys, finished_sweep):
    prev = tiny_fs / "prev"
    argv = {
        "run": ["run", "--quiet", "--set", "workload.num_requests=20", "--out", str(prev)],
        "report": [
            "report",
            str(_workspace(tmp_path / "w", {}, finished_sweep) / "done"),
            "--out",
            str(prev / "r.md"),
        ],
    }[command]
    prev.mkdir()
    assert main(argv) == 0
    capsys.readouterr()
    before = snapshot(prev)
    with open(tiny_fs / "filler", "wb") as fh:  # fill the disk to the last block, then free two pages
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC
        fh.truncate(fh.tell() - 8192)  # two pages free: the probe fits, the results do not
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left on device" in err[0] and "intact" in err[0], err
    assert snapshot(prev) == before  # every earlier file whole, no temporary left

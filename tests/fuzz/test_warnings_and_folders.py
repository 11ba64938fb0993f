"""The parts of the contract a catalogue case cannot state: one-line warnings for legal but surprising
input (recorded in summary.json), a folder another process holds, re-runs without --timeline, stale
temporaries, and hypothesis-generated values at every JSON leaf the catalogue corrupts."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specbed.cli import main
from tests.fuzz.generated import BASE_FILES, JSON_DOCS, SLOTS, _at
from tests.fuzz.outputs_flags import WARN_CASES
from tests.fuzz.workspace import snapshot

RUN = ["run", "--quiet", "--set", "workload.num_requests=20"]


@pytest.mark.parametrize("name, argv, files, word", WARN_CASES, ids=[c[0] for c in WARN_CASES])
def test_surprising_input_is_one_warning_line_and_recorded(name, argv, files, word, tmp_path, capsys):
    for fname, data in files.items():
        (tmp_path / fname).write_bytes(data)
    out = tmp_path / "out"
    argv = [a.replace("{W}", str(tmp_path)) for a in argv]
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and ": warning: " in lines[0] and word in lines[0], lines
    assert word in " ".join(json.loads((out / "summary.json").read_text())["warnings"])


def test_a_run_is_refused_in_a_folder_another_process_holds(tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    fd = os.open(busy, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert main([*RUN, "--out", str(busy)]) == 2
    finally:
        os.close(fd)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "busy" in err[0], err
    assert list(busy.iterdir()) == []


def test_a_rerun_without_timeline_leaves_no_old_timeline(tmp_path, capsys):
    out = tmp_path / "r"
    assert main([*RUN, "--timeline", "--out", str(out)]) == 0
    assert (out / "timeline.json").exists()
    assert main([*RUN, "--out", str(out)]) == 0
    assert not (out / "timeline.json").exists()


def test_a_killed_writers_temporary_is_cleaned_by_the_next_run(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    stale = out / f".timeline.json.tmp-{int(gone.stdout)}"
    stale.write_bytes(b"x" * 1024)
    os.utime(stale, (time.time() - 3600,) * 2)
    assert main([*RUN, "--out", str(out)]) == 0
    assert not stale.exists()


_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_LEAVES = [(slot, path) for slot, (_, leaves, shapes) in JSON_DOCS.items() for path in (*leaves, *shapes)]
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.recursive(
        st.integers(0, 9),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    ),
)


@_SETTINGS
@given(leaf=st.sampled_from(_LEAVES), value=_VALUES)
def test_generated_values_at_every_json_leaf_are_accepted_or_one_line(leaf, value, tmp_path_factory, capsys):
    slot, path = leaf
    root = tmp_path_factory.mktemp("leaf")
    for name, data in BASE_FILES.items():
        (root / name).write_bytes(data)
    (root / "x.json").write_text(json.dumps(_at(JSON_DOCS[slot][0], path, value)))
    (root / "run").mkdir()
    argv = [a.replace("{F}", str(root / "x.json")).replace("{W}", str(root)) for a in SLOTS[slot][0]]
    before = {k: v for k, v in snapshot(root).items() if not k.startswith(("k.json", "fit.json"))}
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 2), err[-600:]
    if code == 2:
        lines = [ln for ln in err.strip().splitlines() if ": warning: " not in ln]
        assert len(lines) == 1, err[-600:]
    after = {k: v for k, v in snapshot(root).items() if k in before}
    assert after == before


def test_the_held_back_probe_has_at_least_500_inputs_none_in_the_catalogue():
    from bench.probe_more import all_probes
    from tests.fuzz.cases import all_cases

    probes = all_probes()
    assert len(probes) >= 500 and len({p.id for p in probes}) == len(probes)

    def norm(files: dict) -> tuple:
        out = []
        for name, data in sorted(files.items()):
            if name == "@summary" and isinstance(data, tuple):
                data = f"{data[0]}={data[1]}".encode()
            out.append((name, data if isinstance(data, bytes) else repr(data).encode()))
        return tuple(out)

    catalogue = {(tuple(c.argv), norm(c.files)) for c in all_cases()}
    same = [p.id for p in probes if (tuple(p.argv), norm(p.setup)) in catalogue]
    assert not same, same[:5]  # held back: other file names, values and special-file kinds


def test_a_run_and_a_sweep_racing_for_one_folder_never_mix(tmp_path):
    from tests.fuzz.base import SWEEP

    (tmp_path / "s.toml").write_bytes(SWEEP)
    py = [sys.executable, "-m", "specbed"]
    for trial in range(3):
        out = tmp_path / f"o{trial}"
        procs = [
            subprocess.Popen([*py, *RUN, "--out", str(out)], stderr=subprocess.PIPE),
            subprocess.Popen(
                [
                    *py,
                    "sweep",
                    str(tmp_path / "s.toml"),
                    "--out",
                    str(out),
                    "--quiet",
                    "--model",
                    "tests.analysis.fake_model:MODEL",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            ),
        ]
        codes = [p.wait(timeout=180) for p in procs]
        names = {p.name for p in out.iterdir()} if out.exists() else set()
        is_run, is_sweep = "summary.json" in names, "sweep.json" in names
        assert is_run != is_sweep, (codes, names)  # exactly one of them, never a mix
        assert sorted(codes) == [0, 2], codes  # the other refused in one line

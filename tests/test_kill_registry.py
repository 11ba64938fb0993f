"""Every command that writes is in bench/kill_writers.py's list, so a new one is kill-tested the day it lands;
and a folder writer holds its folder from the first check to the swap (specsched.io.jobdir.claim)."""

from __future__ import annotations

import re

import pytest

from bench.kill_registry import NOT_WRITERS, WRITERS
from specbed.cli import SUBCOMMANDS, main
from specsched.io import jobdir, safeio
from specsched.io.errors import InputError

OUTPUT_FLAG = re.compile(r"--(?:out|json|steps-out|into)\b")
NESTED = re.compile(r"^usage: \S+ \S+ (?:\[-h\] )?\{(\w[\w-]*(?:[,|][\w-]+)+)\}")  # `trace {stats,...}`


def _help(capsys, words: list[str]) -> str:
    main([*words, "--help"])
    return capsys.readouterr().out


def _commands(capsys) -> dict[tuple[str, ...], str]:
    """Every command and sub-command (as CLI words) with its --help text."""
    found = {}
    for name in SUBCOMMANDS:
        if name == "vllm":  # aliases of curves/export/compare/validate/cost calibrate
            continue
        text = _help(capsys, [name])
        subs = NESTED.search(text)
        if subs is None:
            found[(name,)] = text
            continue
        for sub in re.split(r"[,|]", subs.group(1)):
            found[(name, sub)] = _help(capsys, [name, sub])
    return found


def test_every_command_with_an_output_flag_is_kill_tested(capsys):
    covered = {w.words for w in WRITERS.values()} | set(NOT_WRITERS)
    writers = {words for words, text in _commands(capsys).items() if OUTPUT_FLAG.search(text)}
    missing = sorted(w for w in writers if w not in covered)
    assert not missing, f"writing commands missing from bench/kill_registry.py WRITERS: {missing}"


def test_a_claimed_folder_refuses_a_second_writer_and_another_command(tmp_path):
    out = tmp_path / "adv"
    with jobdir.claim(out, "advise"):
        assert out.is_dir()
        with pytest.raises(InputError, match="another specbed process"):
            with jobdir.claim(out, "advise"):
                pass
    assert not out.exists()  # made for a job that wrote nothing: removed again
    safeio.check_dir(out)
    (out / ".job.json").write_text('{"command": "run"}')
    with pytest.raises(InputError, match=r"another command \(run\)"):
        with jobdir.claim(out, "advise"):
            pass
    with jobdir.claim(None, "advise"):  # no --out: nothing held
        pass


def test_paper_figures_write_through_the_atomic_writers():
    """A figure script never writes a file itself (a kill would leave half a PNG): `common.png` renders,
    `safeio` / `write_summary` write."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "paper_figs"
    direct = [
        p.name
        for p in sorted(root.glob("*.py"))
        if p.name != "common.py"
        and re.search(r"\.savefig\(|\bopen\([^)]*['\"]w|(?<!safeio)\.write_(?:text|bytes)\(", p.read_text())
    ]
    assert not direct, f"paper_figs scripts writing files directly: {direct}"

"""One CLI vocabulary: `--out DIR` for a folder, `--out FILE` for one file, `--json FILE` (one meaning),
no `--out-dir`, the vLLM verbs under `specbed vllm`, `specbed --version` — checked over every --help."""

from __future__ import annotations

import re

import pytest

from specbed.cli import OLD_NAMES, SUBCOMMANDS, VLLM
from specbed.cli import main as specbed

#: commands that take a sub-subcommand: their verbs
VERBS = {
    "trace": ("stats", "convert", "synth"),
    "engine": ("train", "eval", "profile", "curves"),
    "cost": ("fit", "check", "calibrate"),
    "curves": ("from-vllm",),
    "vllm": tuple(VLLM),
}
COMMANDS = [(name, verb) for name in SUBCOMMANDS for verb in VERBS.get(name, (None,))]


def _help(argv, capsys) -> str:
    capsys.readouterr()
    assert specbed([*argv, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name, verb", COMMANDS, ids=[f"{n} {v or ''}".strip() for n, v in COMMANDS])
def test_output_flags_speak_one_vocabulary(name, verb, capsys):
    text = _help([name] if verb is None else [name, verb], capsys)
    assert "--out-dir" not in text, "--out-dir is retired: --out DIR"
    assert set(re.findall(r"--out[ =]([A-Z_]+)", text)) <= {"DIR", "FILE"}, "--out takes DIR or FILE"
    assert set(re.findall(r"--json(?=[\s\],=])(?:[ =]([A-Z_]+))?", text)) <= {"FILE"}, "--json takes a FILE"


def test_the_retired_out_dir_is_read_as_out_with_a_warning(capsys):
    import argparse

    from specsched.io.inputs import collect_warnings
    from specsched.io.results import add_out_dir

    p = argparse.ArgumentParser()
    add_out_dir(p, help="results folder")
    with collect_warnings("specbed x"):
        assert p.parse_args(["--out-dir", "r"]).out == "r"
    assert "specbed x: warning: " in capsys.readouterr().err
    assert "--out-dir" not in p.format_help()


def test_vllm_groups_the_vllm_verbs_and_the_old_names_still_run(capsys):
    text = _help(["vllm"], capsys)
    assert all(verb in text for verb in ("curves", "export", "compare", "validate", "calibrate"))
    for verb, (old, before, _) in VLLM.items():
        assert _help(["vllm", verb], capsys) == _help([old, *before], capsys)
    usage = _help([], capsys)
    assert all(f"  {old} " not in usage for old in OLD_NAMES)  # listed once, as old names
    assert specbed(["vllm", "nope"]) == 2


def test_version(capsys):
    assert specbed(["--version"]) == 0
    assert re.fullmatch(r"specbed \S+\n", capsys.readouterr().out)

"""Every command of the README's "Common commands" block runs as written, on the shipped examples/.

The block is read from README.md (continuation lines joined, comments dropped) and each line is run
in-process, in order (later lines read what earlier ones wrote: results/azure, results/sweep, fit.json,
curves.json), in a scratch folder that links every top-level entry of the repository, so relative paths
resolve as from a fresh clone and outputs land in the scratch folder. Long jobs run at a reduced size
(`REDUCED`: `--set` keys appended, or a smaller copy of the input file in the scratch folder); `--backend
ray` lines are skipped only when Ray is not importable.

May import: the standard library, pytest, `specbed`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import shlex
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a line's leading words -> arguments appended at reduced size (run lines: fewer requests)
REDUCED: dict[str, tuple[str, ...]] = {
    "specbed run configs/azure-conv-replay.toml": ("--set", "workload.num_requests=300"),
    "specbed run examples/ray-small.toml": ("--set", "workload.num_requests=120"),
    "specbed run --set drafter.curves": ("--set", "workload.num_requests=200"),
    "specbed run --set cost.table=b300x8": ("--set", "workload.num_requests=200"),
    "specbed run configs/default.toml": ("--set", "workload.num_requests=200"),
    "specbed verify": ("--quick",),
    "specbed engine eval": ("--prompts", "2", "--new-tokens", "16"),
    "specbed engine profile": ("--new-tokens", "24"),
    "specbed engine curves": ("--prompts", "2", "--new-tokens", "16"),
    "specbed fidelity": (
        "--requests",
        "8",
        "--concurrency",
        "2",
        "--eval-prompts",
        "2",
        "--policies",
        "ar",
        "--attempts",
        "1",
    ),
    "python -m paper_figs.deepseek_production": ("--tiny",),
    "python -m paper_figs.vllm_adaptive": ("--tiny",),
    "specbed advise": ("--loads", "1,16", "--requests-per-user", "2"),
    "python -m sim.config_doc": ("--check",),  # the real one rewrites the repository's docs/config.md
}
#: input files replaced in the scratch folder by a smaller copy: path -> (regex, replacement)
SMALLER: dict[str, tuple[str, str]] = {
    "sweeps/demo.toml": (r'"workload.concurrency" = \[.*?\]\n"workload.num_requests" = \[.*?\]',
                         '"workload.concurrency" = [8, 64]\n"workload.num_requests" = [48, 192]'),
    # the search on 4 candidates (one GPU kind, one size), not the worked example's 108: a wall-clock
    # --budget-s would make the line's outcome depend on the machine's load
    "configs/search/azure_conv_2x.toml": (
        r'\[axes\]\n(.*\n){3}',
        '[axes]\n"cost.table" = ["h100-dense70b-tp4"]\n"server.replicas" = [2]\n'
        '"server.max_num_batched_tokens" = [512]\n',
    ),
}  # fmt: skip


def readme_commands(text: str) -> list[str]:
    """The command lines of the README's "Common commands" ```sh block, continuations joined."""
    block = text.split("## Common commands", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [ln.strip() for ln in block.replace("\\\n", " ").splitlines() if ln.strip()]


def _workspace(tmp: Path) -> None:
    """A scratch folder linking the repository's entries, with each SMALLER file a real, reduced copy (every
    folder on its path is made real and its other entries linked, so no write goes through a link)."""
    real = {str(Path(rel).parents[i]) for rel in SMALLER for i in range(len(Path(rel).parts) - 1)}
    for folder in sorted(real | {"."}, key=lambda f: len(Path(f).parts)):
        (tmp / folder).mkdir(exist_ok=True)
        for entry in (ROOT / folder).iterdir():
            rel = str(entry.relative_to(ROOT))
            if entry.name in ("results", ".git") or rel in real or rel in SMALLER:
                continue
            (tmp / rel).symlink_to(entry)
    for rel, (pattern, repl) in SMALLER.items():
        text, n = re.subn(pattern, repl, (ROOT / rel).read_text(), flags=re.S)
        assert n == 1, f"{rel}: the reduction no longer matches"
        (tmp / rel).write_text(text)


def _argv(line: str) -> list[str]:
    argv = shlex.split(line, comments=True)
    for prefix, extra in REDUCED.items():
        if line.startswith(prefix):
            return argv + list(extra)
    return argv


def run_line(argv: list[str]) -> int:
    """Run one README line in-process: `specbed ...` through specbed.cli, `python -m M ...` as M."""
    if argv[0] == "specbed":
        from specbed.cli import main

        return main(argv[1:])
    assert argv[:2] == ["python", "-m"], argv
    old = sys.argv
    sys.argv = [argv[2], *argv[3:]]
    try:
        with warnings.catch_warnings():  # the module may be imported already (by an earlier line): harmless
            warnings.filterwarnings(
                "ignore", message=".*found in sys.modules after import", category=RuntimeWarning
            )
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return int(done.code or 0) if not isinstance(done.code, str) else 1
    finally:
        sys.argv = old
    return 0


def test_the_readme_block_is_found():
    lines = readme_commands((ROOT / "README.md").read_text())
    assert len(lines) >= 30 and all(ln.split()[0] in ("specbed", "python") for ln in lines)


def test_every_readme_command_runs_as_written(tmp_path, capsys):
    lines = readme_commands((ROOT / "README.md").read_text())
    _workspace(tmp_path)
    has_ray = importlib.util.find_spec("ray") is not None
    failed, times = [], []
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for line in lines:
            if "--backend ray" in line and not has_ray:
                continue
            t0 = time.perf_counter()
            try:
                rc = run_line(_argv(line))
            except Exception as err:  # reported with the line
                rc = f"{type(err).__name__}: {err}"
            times.append((time.perf_counter() - t0, line))
            if os.environ.get("README_TIMES"):
                print(f"{times[-1][0]:7.1f} s  rc={rc}  {line[:90]}", file=sys.__stderr__, flush=True)
            if rc != 0:
                failed.append(f"{line}  -> {rc}")
    finally:
        os.chdir(cwd)
    with capsys.disabled():
        if os.environ.get("README_TIMES"):
            for secs, line in sorted(times, reverse=True):
                print(f"{secs:7.1f} s  {line[:100]}")
    assert not failed, "README commands that failed:\n" + "\n".join(failed)

"""Every command that writes, for bench/kill_writers.py: how to run it small, and how to judge what it left.

Role: the registry of writers. `WRITERS` maps a label to a `Writer`: the CLI words it covers (`words`,
e.g. ("trace", "synth"); tests/test_kill_registry.py holds every command whose `--help` offers an output
flag to having one here), the argv of trial `i` (a new seed or setting each trial where the command has
one), whether it writes a folder (`.job.json`, `expect`ed files) or single files, and `heavy` for the
commands that load the torch engine (seconds each; `--commands all` runs them). `state` classifies what
a killed or finished job left: `whole`, `none` or `MIXED: why`; `debris` names temporaries left behind.

May import: the standard library, `specsched.io` (jobdir).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specsched.io import jobdir

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "vllm"
CONFIGS = ROOT / "configs"
PY = [sys.executable, "-m", "specbed.cli"]
SPACE = """name = "k"
[axes]
"cost.table" = ["h100-dense8b", "h200-dense8b"]
"server.replicas" = [1, 2]
[search]
rungs = [0.5, 1.0]
keep = 2
"""
TRAFFIC = """[workload]
kind = "poisson"
rate = 50.0
num_requests = 200
input_tokens = 256
output_tokens = 64
"""
SWEEP = """name = "k"
[base]
seed = SEED
[base.workload]
num_requests = 150
[axes]
"workload.rate" = [10.0, 20.0, 40.0]
"""
BENCH = json.dumps({"input_lens": [100, 200], "output_lens": [50, 60], "request_rate": 2.0})
ENGINE = ["--quiet", "--prompt-len", "8"]


@dataclass(frozen=True)
class Writer:
    """One writing command: `argv(work, out, trial, resume)`; `folder`: a results folder (`expect`ed files
    beside `.job.json` and the config it names), else `files`: the file names it writes (out is the
    first; the others beside it)."""

    words: tuple[str, ...]
    argv: Callable[[Path, Path, int, bool], list[str]]
    folder: bool = False
    expect: frozenset[str] = frozenset()
    files: tuple[str, ...] = ()
    heavy: bool = False
    needs: tuple[str, ...] = ()  # prepared inputs (see `prepare`)
    extra_ok: frozenset[str] = field(default_factory=frozenset)  # entries a folder may hold besides


def _run(w, o, i, r):
    sets = ["--set", "workload.num_requests=400", "--set", f"seed={i}"]
    return [*PY, "run", *sets, "--out", str(o), "--quiet"]


def _sweep(w, o, i, r):
    (w / f"sweep{i}.toml").write_text(SWEEP.replace("SEED", str(i % 2)))
    return [*PY, "sweep", str(w / f"sweep{i}.toml"), "--out", str(o), "--jobs", "1", "--quiet",
            "--resume" if r else "--force"]  # fmt: skip


def _search(w, o, i, r):
    (w / "space.toml").write_text(SPACE)
    (w / "traffic.toml").write_text(TRAFFIC)
    slo = "ttft_p90<=1s" if i % 2 else "ttft_p90<=2s"
    return [*PY, "search", str(w / "space.toml"), "--traffic", str(w / "traffic.toml"), "--slo", slo,
            "--out", str(o), "--jobs", "1", "--quiet", "--resume"]  # fmt: skip


def _validate(w, o, i, r, flag="--out"):
    return [*PY, "validate", str(EX / "runs.csv"), "--workloads", str(EX / "workloads.json"),
            "--seed", str(i), flag, str(o)]  # fmt: skip


def _advise(w, o, i, r):
    (w / "t.json").write_text(BENCH)
    return [*PY, "advise", "--model", "llama3.1-8b", "--quiet", "--loads", str(1 + i % 2),
            "--traffic", str(w / "t.json"), "--out", str(o)]  # fmt: skip


def _curves(w, o, i, r):
    return [*PY, "vllm", "curves", str(EX / "before.prom"), str(EX / "after.prom"), "--drafter", f"d{i}",
            "--domain", "chat", "--out", str(o)]  # fmt: skip


def _trace(verb):
    def argv(w, o, i, r):
        tail = ["--n", str(40 + i), "--seed", str(i)] if verb == "synth" else ["--max-context", str(2000 + i)]
        return [*PY, "trace", verb, str(ROOT / "examples" / "burstgpt-sample.csv"), *tail, "--out", str(o)]

    return argv


def _cost_fit(w, o, i, r):
    return [*PY, "cost", "fit", str(ROOT / "specsched" / "data" / "llama2-70b_h100.csv"), "--model",
            "llama2-70b", "--gpu", "h100", "--out", str(o)]  # fmt: skip


def _cost_check(w, o, i, r):
    return [*PY, "cost", "check", str(ROOT / "specsched" / "data" / "llama2-70b_h100.csv"), "--fit",
            str(w / "fit0.json"), "--json", str(o)]  # fmt: skip


def _engine(verb, *extra):
    def argv(w, o, i, r):
        return [*PY, "engine", verb, *ENGINE, *extra, "--seed", str(i), "--out", str(o)]

    return argv


def _profile(w, o, i, r):
    return [*PY, "engine", "profile", *ENGINE, "--requests", "2", "--new-tokens", str(16 + i % 2),
            "--out", str(o), "--steps-out", str(o.parent / "steps.csv")]  # fmt: skip


def _t(*template: str) -> Callable[[Path, Path, int, bool], list[str]]:
    """An argv from `template`: {o} the output, {w} the work folder, {i} the trial, {R} the repository,
    {EX} examples/vllm; the first word "PY" is `python -m specbed.cli`, "PYM" is `python -m`."""

    def argv(w: Path, o: Path, i: int, r: bool) -> list[str]:
        words = [t.format(o=o, w=w, i=i, R=ROOT, EX=EX, i2=2 + i) for t in template[1:]]
        return [*(PY if template[0] == "PY" else [sys.executable, "-m"]), *words]

    return argv


RUN_FILES = frozenset({"summary.json", "requests.csv", "series.csv", "confidence.json", "config.toml"})
WRITERS: dict[str, Writer] = {
    "run": Writer(("run",), _run, folder=True, expect=RUN_FILES),
    "disagg": Writer(
        ("disagg",),
        _t("PY", "disagg", "{R}/configs/disagg-small.toml", "--set", "seed={i}", "--out", "{o}", "--quiet"),
        folder=True,
        expect=frozenset({"summary.json", "requests.csv", "config.toml"}),
    ),
    "run --json": Writer(
        ("run",),
        _t(
            "PY", "run", "--set", "workload.num_requests=300", "--set", "seed={i}", "--json", "{o}", "--quiet"
        ),
        files=("run.json",),
    ),
    "sweep": Writer(("sweep",), _sweep, folder=True),
    "search": Writer(
        ("search",),
        _search,
        folder=True,
        expect=frozenset({"ranked.csv", "dropped.csv", "summary.md", "config.json"}),
        extra_ok=frozenset(
            {
                "cells",
                "errors",
                "sweep.json",
                "results.jsonl",
                "results.csv",
                "winner.toml",
                "vllm_serve.sh",
                "vllm_serve_all.sh",
                "frontier.png",
                "pareto.png",
            }
        ),  # its run cache
    ),
    "validate": Writer(
        ("validate",),
        _validate,
        folder=True,
        expect=frozenset({"validate.json", "report.md", "config.json"}),
        extra_ok=frozenset({"validate.png"}),
    ),
    "validate --json": Writer(
        ("validate",), lambda w, o, i, r: _validate(w, o, i, r, "--json"), files=("v.json",)
    ),
    "validate --spec --json": Writer(
        ("validate",),
        _t("PY", "validate", "--spec", "{R}/validate/data/spec_check.csv", "--json", "{o}"),
        files=("vs.json",),
    ),
    "advise": Writer(
        ("advise",),
        _advise,
        folder=True,
        expect=frozenset({"report.md", "advise.json", "config.json"}),
        extra_ok=frozenset({"gain.png", "pareto.png"}),
    ),
    "report": Writer(
        ("report",),
        lambda w, o, i, r: [*PY, "report", str(w / "sweep0"), "--out", str(o), "--slo", str(20 + i)],
        files=("summary.md", "pareto.png"),
        needs=("sweep0",),
    ),
    "pareto": Writer(
        ("pareto",), _t("PY", "pareto", "{w}/sweep0", "--out", "{o}"), files=("p.png",), needs=("sweep0",)
    ),
    "export": Writer(
        ("export",),
        _t("PY", "vllm", "export", "{w}/run0", "--out", "{o}"),
        files=("e.json",),
        needs=("run0",),
    ),
    "curves from-vllm": Writer(("curves",), _curves, files=("c.json",)),
    "trace convert": Writer(("trace", "convert"), _trace("convert"), files=("cv.csv",)),
    "trace synth": Writer(("trace", "synth"), _trace("synth"), files=("s.csv.gz",)),
    "plan --draft-schedule": Writer(
        ("plan",),
        _t(
            "PY",
            "plan",
            "--draft-schedule",
            "--cost",
            "h200-v4flash",
            "--batch-sizes",
            "1,{i2}",
            "--json",
            "{o}",
        ),
        files=("p.json",),
    ),
    "cost fit": Writer(("cost", "fit"), _cost_fit, files=("f.json",)),
    "cost check": Writer(("cost", "check"), _cost_check, files=("fc.json",), needs=("fit0",)),
    "cost calibrate": Writer(
        ("cost", "calibrate"),
        _t(
            "PY",
            "vllm",
            "calibrate",
            "{EX}/runs.csv",
            "--workloads",
            "{EX}/workloads.json",
            "--gpu",
            "h100",
            "--out",
            "{o}",
        ),
        files=("k.json",),
    ),
    "cost calibrate --spec": Writer(
        ("cost", "calibrate"),
        _t("PY", "cost", "calibrate", "--spec", "{R}/validate/data/spec_train.csv", "--out", "{o}"),
        files=("sk.json",),
    ),
    "paper_figs": Writer(
        ("paper_figs",),
        _t("PYM", "paper_figs.crossover", "--tiny", "--out", "{o}", "--jobs", "1", "--quiet"),
        folder=True,
        expect=frozenset({"summary.json", "crossover.png", "config.json"}),
        extra_ok=frozenset({"sweep"}),
    ),
    "engine eval": Writer(
        ("engine", "eval"),
        _engine("eval", "--prompts", "2", "--new-tokens", "8", "--drafters", "dspark2"),
        folder=True,
        heavy=True,
        expect=frozenset({"results.json", "report.txt", "config.json"}),
        extra_ok=frozenset({"reliability_dspark2.png"}),
    ),
    "engine curves": Writer(
        ("engine", "curves"),
        _engine("curves", "--prompts", "2", "--new-tokens", "8"),
        files=("cur.json",),
        heavy=True,
    ),
    "engine profile": Writer(("engine", "profile"), _profile, files=("prof.csv", "steps.csv"), heavy=True),
}
#: commands that write nothing, or whose output flag is checked elsewhere (the registry test's exceptions)
NOT_WRITERS = {
    ("verify",): "prints its table; writes nothing",
    ("compare",): "prints; writes nothing",
    ("trace", "stats"): "prints JSON on stdout",
    ("demo",): "a sweep folder (analysis.runner, as `sweep`) + summary.md/pareto.png as `report`; minutes",
    ("fidelity",): "engine + simulator closed loop, minutes; written by results.write_results",
    ("engine", "train"): "trains models (minutes); checkpoints by temp + rename (engine.lm.checkpoint)",
}


def target(w: Writer, work: Path, label: str) -> Path:
    """Where trial outputs of writer `w` go: a folder, or the first file in a folder of its own."""
    base = work / label.replace(" ", "_").replace("-", "")
    return base if w.folder else base / w.files[0]


def prepare(work: Path, needs: tuple[str, ...]) -> None:
    """Make the inputs a writer reads: `run0` (a run folder), `sweep0` (a sweep folder), `fit0` (a fit)."""
    import subprocess

    argv = {
        "run0": lambda: _run(work, work / "run0", 0, False),
        "sweep0": lambda: _sweep(work, work / "sweep0", 0, False),
        "fit0": lambda: _cost_fit(work, work / "fit0.json", 0, False),
    }
    for need in needs:
        if not (work / need).exists() and not (work / f"{need}.json").exists():
            subprocess.run(argv[need](), cwd=ROOT, capture_output=True, check=True)


def state(w: Writer, out: Path) -> str:
    """'whole', 'none' or 'MIXED: why' for what writer `w` left at `out`."""
    if w.folder:
        return _folder_state(w, out)
    states = [_file_state(p) for p in [out, *(out.parent / n for n in w.files[1:])]]
    if all(s == "none" for s in states):
        return "none"
    if all(s == "whole" for s in states):
        return "whole"
    return "MIXED: " + ", ".join(f"{n} {s}" for n, s in zip(w.files, states))


def _folder_state(w: Writer, out: Path) -> str:
    if not out.exists():
        return "none"
    if w.words == ("sweep",):
        return _sweep_state(out)
    job = jobdir.read_job(out)
    names = {n for n in os.listdir(out) if not n.startswith(".")}
    if job is None:
        return "none" if not names else f"MIXED: result files without a job ({sorted(names)})"
    conf = out / ("config.toml" if "config.toml" in w.expect else "config.json")
    try:
        if jobdir.text_hash(conf.read_text()) != job.get("config_hash"):
            return f"MIXED: {conf.name} is not the .job.json job's"
    except OSError:
        return f"MIXED: no {conf.name}"
    missing, extra = w.expect - names, names - w.expect - w.extra_ok
    if missing or extra:
        return f"MIXED: missing {sorted(missing)}, foreign {sorted(extra)}"
    return "whole"


def _sweep_state(out: Path) -> str:
    try:
        manifest = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        cells = out / "cells"
        return "none" if not cells.exists() or not os.listdir(cells) else "MIXED: no manifest"
    cells = list((out / "cells").glob("*.json"))
    for p in cells:
        try:
            json.loads(p.read_text())
        except ValueError:
            return f"MIXED: broken cell {p.name}"
    want = len(manifest.get("cells", []))
    return "whole" if len(cells) == want else f"partial ({len(cells)}/{want} cells, resumable)"


def _file_state(path: Path) -> str:
    """'none', 'whole' or 'truncated' by the file's own format (JSON parses, CSV rows complete, PNG ends
    in its IEND chunk, gzip's CRC checks, text ends with a newline)."""
    if not path.exists():
        return "none"
    try:
        data = path.read_bytes()
        name = path.name
        if name.endswith(".gz"):
            data, name = gzip.decompress(data), name[:-3]
        if name.endswith(".json"):
            json.loads(data)
            return "whole"
        if name.endswith(".png"):
            return "whole" if data.endswith(b"IEND\xaeB`\x82") else "truncated"
        if name.endswith(".csv"):
            lines = [ln for ln in data.decode().split("\n") if ln and not ln.startswith("#")]
            commas = {ln.count(",") for ln in lines[1:]} if len(lines) > 1 else set()
            ok = data.endswith(b"\n") and len(commas) <= 1
            return "whole" if ok else "truncated"
        return "whole" if data.endswith(b"\n") else "truncated"
    except (OSError, ValueError, EOFError):
        return "truncated"


def debris(work: Path) -> list[str]:
    """Temporary files or folders (`.tmp-*`, `*.tmp-PID`) and file locks (`.NAME.lock`) under `work`."""
    found = []
    for dirpath, dirnames, filenames in os.walk(work):
        for name in dirnames + filenames:
            if ".tmp-" in name or (name.startswith(".") and name.endswith(".lock")):
                found.append(os.path.relpath(os.path.join(dirpath, name), work))
    return found

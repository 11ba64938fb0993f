"""kill -9 each writing command at a random instant, then rerun (or --resume): is the folder whole?

Role: the check of issue 36's folder goals, on small inputs. For `run`, `sweep`, `search` and
`validate`: N trials, each starting the command (a new seed each trial) into a folder holding the previous
trial's results, killing its process group with SIGKILL after a uniform random delay within the command's
measured wall time, and classifying the folder: `whole` (one job's complete results: `.job.json` whose
config hash matches the config beside it and every result file present, or for a sweep every finished
cell readable), `none` (no results), else `MIXED`. Then it reruns (`--resume` for sweep and search) and
checks the folder is whole. `--pairs` also starts two writers on one folder together: one must be refused
(exit 2), the other's results whole.

    nice python -m bench.kill_writers [--trials 20] [--commands run,sweep,search,validate] [--pairs]

May import: the standard library, `specsched.io` (jobdir, inputs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specsched.io import jobdir

ROOT = Path(__file__).resolve().parents[1]
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
EXPECT = {
    "run": {"summary.json", "requests.csv", "series.csv", "confidence.json", "config.toml"},
    "validate": {"validate.json", "report.md", "config.json"},
    "search": {"ranked.csv", "dropped.csv", "summary.md", "config.json"},
}


def argv_for(cmd: str, work: Path, out: Path, trial: int, resume: bool) -> list[str]:
    base = [sys.executable, "-m", "specbed.cli"]
    if cmd == "run":
        sets = ["--set", "workload.num_requests=400", "--set", f"seed={trial}"]
        return [*base, "run", *sets, "--out", str(out), "--quiet"]
    if cmd == "validate":
        ex = ROOT / "examples" / "vllm"
        return [*base, "validate", str(ex / "runs.csv"), "--workloads", str(ex / "workloads.json"),
                "--seed", str(trial), "--out", str(out)]  # fmt: skip
    if cmd == "sweep":
        sweep = work / f"sweep{trial}.toml"
        sweep.write_text(SWEEP.replace("SEED", str(trial % 2)))
        return [*base, "sweep", str(sweep), "--out", str(out), "--jobs", "1",
                "--resume" if resume else "--force"]  # fmt: skip
    (work / "space.toml").write_text(SPACE)
    (work / "traffic.toml").write_text(TRAFFIC)
    slo = "ttft_p90<=1s" if trial % 2 else "ttft_p90<=2s"
    return [*base, "search", str(work / "space.toml"), "--traffic", str(work / "traffic.toml"), "--slo", slo,
            "--out", str(out), "--jobs", "1", "--quiet", "--resume"]  # fmt: skip


def state(cmd: str, out: Path) -> str:
    """'whole', 'none' or 'MIXED: why' for results folder `out`."""
    if not out.exists():
        return "none"
    if cmd == "sweep":
        return _sweep_state(out)
    job = jobdir.read_job(out)
    names = {n for n in os.listdir(out) if not n.startswith(".")}
    if job is None:
        return "none" if not (names & EXPECT[cmd]) else f"MIXED: result files without a job ({sorted(names)})"
    conf = out / ("config.toml" if cmd == "run" else "config.json")
    if jobdir.text_hash(conf.read_text()) != job.get("config_hash"):
        return "MIXED: config.* is not the .job.json job's"
    missing = EXPECT[cmd] - names
    return f"MIXED: missing {sorted(missing)}" if missing else "whole"


def _sweep_state(out: Path) -> str:
    try:
        manifest = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        cells = out / "cells"
        return "none" if not cells.exists() or not os.listdir(cells) else "MIXED: no manifest"
    cells = [p for p in (out / "cells").glob("*.json")]
    for p in cells:
        try:
            json.loads(p.read_text())
        except ValueError:
            return f"MIXED: broken cell {p.name}"
    want = len(manifest.get("cells", []))
    return "whole" if len(cells) == want else f"partial ({len(cells)}/{want} cells, resumable)"


def timed(argv: list[str]) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    return p.returncode, time.perf_counter() - t0, p.stderr.strip()[-200:]


def trials(cmd: str, n: int, work: Path, rng: random.Random) -> dict:
    out = work / f"{cmd}-out"
    rc, wall, err = timed(argv_for(cmd, work, out, 0, False))
    assert rc in (0, 1), (cmd, rc, err)
    tally = {"killed": {}, "after": {}, "wall_s": round(wall, 2)}
    for i in range(1, n + 1):
        p = subprocess.Popen(argv_for(cmd, work, out, i, False), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        time.sleep(rng.uniform(0.0, wall))
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        s = state(cmd, out)
        tally["killed"][s] = tally["killed"].get(s, 0) + 1
        rc, _, err = timed(argv_for(cmd, work, out, i, True))
        s = state(cmd, out)
        if rc not in (0, 1):  # e.g. a kill before `sweep --force` cleared the last trial's sweep: the
            s = f"{s}, rerun refused (exit {rc}: {err[-90:]})"  # folder still holds that one whole
        tally["after"][s] = tally["after"].get(s, 0) + 1
    return tally


def pair(cmd: str, work: Path) -> str:
    out = work / f"{cmd}-pair"
    ps = [subprocess.Popen(argv_for(cmd, work, out, i, False), cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True) for i in (1, 2)]  # fmt: skip
    rcs = [p.wait() for p in ps]
    errs = [p.stderr.read().strip()[-160:] for p in ps]
    refused = sum(rc == 2 for rc in rcs)
    return f"exit codes {rcs}, refused {refused}, folder {state(cmd, out)}; {[e for e in errs if e]}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--commands", default="run,sweep,search,validate")
    ap.add_argument("--pairs", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="killw-") as tmp:
        for cmd in args.commands.split(","):
            t0 = time.perf_counter()
            tally = trials(cmd, args.trials, Path(tmp), rng)
            took = time.perf_counter() - t0
            print(f"{cmd}: {args.trials} kills, one wall {tally['wall_s']} s; right after the kill "
                  f"{tally['killed']}; after the rerun {tally['after']} ({took:.0f} s)")  # fmt: skip
            if args.pairs:
                print(f"{cmd}: two writers at once: {pair(cmd, Path(tmp))}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

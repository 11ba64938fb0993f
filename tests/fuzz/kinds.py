"""What each flag of each command is (the generator's registry), and a valid seed file of every file kind.

Role: `role(command, flag)` classifies every flag `tests.fuzz.discover` finds: a switch, a choice, a
number (an `int`/`float`/validator type), or, for a plain-string flag, the entry of `ROLES` (per command)
or `COMMON` (any command): a file kind of `SEEDS` (an input read from a file), `out-file` / `out-dir` (an
output), `set` (a `--set KEY=VALUE`), `name` (a catalogue name) or `text` (a small language: an SLO, a
list). A plain-string flag in neither table is "unknown": `tests/fuzz/test_generator.py` fails naming it,
so a new input flag needs one line here (and, for a new file kind, a seed in `SEEDS`).

`SEEDS[kind] = (suffix, bytes)`: a file the command accepts (from examples/, configs/ or the catalogue's
good inputs); the kinds `run-dir` and `sweep-dir` are folders a finished run / sweep builds. `NEEDS`
holds the flags a command needs beside the one being varied (`--model` of `advise`, `--fit` of `cost
check`); `HEAVY` commands import torch and train or measure a model: classified, not generated.

May import: the standard library, tests.fuzz (the catalogue's good inputs).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fuzz.base import GOOD_CSV, GOOD_TOML, GOOD_TRACE, SWEEP
from tests.fuzz.generated import BENCH, CURVES, DRAFT, FIT, MEASURED, VRES
from tests.fuzz.newcmds import PRICES, SPACE, TRAFFIC
from tests.fuzz.spec_cases import _csv as spec_csv

ROOT = Path(__file__).resolve().parents[2]
FAKE = "tests.analysis.fake_model:MODEL"
#: torch commands: a valid seed trains or measures a model (minutes); the catalogue covers their flags
HEAVY = ("verify", "engine train", "engine eval", "engine profile", "engine curves", "fidelity")


def _example(rel: str, edit=None) -> bytes:
    data = (ROOT / rel).read_bytes()
    return edit(data) if edit else data


def _runs() -> bytes:  # the header and two runs: enough to model, quick to simulate
    lines = _example("examples/vllm/runs.csv").splitlines(keepends=True)
    return b"".join(lines[:3])


def _knobs() -> bytes:
    table = json.loads(_example("specsched/data/vllm_knobs.json"))
    return json.dumps({"gpu": "h100", "knobs": table["gpus"]["h100"]["knobs"]}).encode()


def _disagg() -> bytes:
    return _example("configs/disagg-small.toml").replace(b"num_requests = 400", b"num_requests = 30")


def _j(doc) -> bytes:
    return json.dumps(doc, indent=1).encode()


#: file kind -> (suffix, a valid file's bytes); called lazily (examples/ is read once per generation)
SEEDS = {
    "config": lambda: (".toml", GOOD_TOML),
    "disagg-config": lambda: (".toml", _disagg()),
    "cost-table": lambda: (".csv", GOOD_CSV),
    "draft-cost": lambda: (".csv", DRAFT),
    "curves": lambda: (".json", _j(CURVES)),
    "trace": lambda: (".csv", GOOD_TRACE),
    "sweep": lambda: (".toml", SWEEP),
    "space": lambda: (".toml", SPACE),
    "traffic": lambda: (".toml", TRAFFIC),
    "prices": lambda: (".toml", PRICES),
    "measured": lambda: (".csv", MEASURED),
    "fit": lambda: (".json", _j(FIT)),
    "runs": lambda: (".csv", _runs()),
    "runs-all": lambda: (".csv", _example("examples/vllm/runs.csv")),  # calibrate needs ≥ 8 runs
    "workloads": lambda: (".json", _example("examples/vllm/workloads.json")),
    "knobs": lambda: (".json", _knobs()),
    "bench": lambda: (".json", _j(BENCH)),
    "vllm-result": lambda: (".json", _j(VRES)),
    "bench-traffic": lambda: (
        ".json",
        _j({"input_lens": [100, 200, 80], "output_lens": [50, 60, 20], "request_rate": 2.0}),
    ),  # fmt: skip
    "bench-detailed": lambda: (".json", _example("examples/vllm/bench_result.json")),
    "spec-csv": lambda: (".csv", spec_csv()),
    "spec-knobs": lambda: (".json", _example("specsched/data/spec_knobs.json")),
    "run-dir": lambda: ("", b""),  # a finished `specbed run --out` folder (built once per sweep)
    "sweep-dir": lambda: ("", b""),  # a finished sweep folder
}
#: config keys that name a file (given as `--set KEY=FILE` or in a config) -> (file kind, the --set items
#: that make the key read); every other string key of the config is a name (CONFIG_NAMES)
CONFIG_FILES = {
    "workload.trace": ("trace", ("workload.kind=trace",)),
    "drafter.curves": ("curves", ()),
    "drafter.cost": ("draft-cost", ()),
    "cost.table": ("cost-table", ("cost.layers=32",)),
    "cost.policy_table": ("cost-table", ("cost.layers=32",)),
}
CONFIG_NAMES = ("workload.kind", "workload.think_dist", "workload.input_dist", "workload.output_dist",
                "workload.domain", "drafter.name", "drafter.kind", "drafter.model", "drafter.engine",
                "policy.name", "policy.draft", "server.router", "acceptance.weighting", "acceptance.model",
                "acceptance.groups", "cost.mode", "cost.model", "cost.precision", "cost.kv_cache_dtype",
                "cost.gpu")  # fmt: skip
#: commands whose `--set` is the simulator's config and reads the files it names
SET_READS_FILES = ("run",)
#: inside a result-folder kind: the files whose fields are varied (the folder's own reader reads them)
FOLDER_FILES = {"run-dir": ("summary.json", "requests.csv"), "sweep-dir": ("sweep.json",)}

#: flags of any command (a command's ROLES entry wins)
COMMON = {
    "--set": "set",
    "--address": "name",
    "--backend": "name",
    "--model": "name",
    "--gpu": "name",
    "--device": "name",
    "--drafter": "name",
    "--domain": "name",
    "--baseline": "name",
    "--x": "name",
    "--y": "name",
    "--log-type": "name",
    "--where": "text",
    "--slo": "text",
    "--json": "out-file",
    "--out-dir": "retired",
}
#: command -> {flag or positional dest -> role}
ROLES: dict[str, dict[str, str]] = {
    "demo": {"--out": "out-dir"},
    "plan": {"config": "config", "--cost": "cost-table", "--curves": "curves"},
    "run": {"config": "config", "--out": "out-dir"},
    "disagg": {"config": "disagg-config", "--out": "out-dir"},
    "trace stats": {"file": "trace"},
    "trace convert": {"file": "trace", "--out": "out-file"},
    "trace synth": {"file": "trace", "--out": "out-file"},
    "sweep": {"sweep": "sweep", "--out": "out-dir", "--model": "model-ref"},
    "pareto": {"dir": "sweep-dir", "--out": "out-file"},
    "report": {"dir": "sweep-dir", "--out": "out-file"},
    "advise": {
        "--speculative-config": "text",
        "--vllm-version": "name",
        "--draft-model": "name",
        "--traffic": "bench-traffic",
        "--profile": "name",
        "--runs": "runs",
        "--row": "name",
        "--workloads": "workloads",
        "--measured": "bench-detailed",
        "--curves": "curves",
        "--loads": "text",
        "--out": "out-dir",
    },
    "search": {"space": "space", "--traffic": "traffic", "--prices": "prices", "--out": "out-dir"},
    "engine train": {"--out": "out-dir", "--config": "name", "--reuse-target": "name"},
    "engine eval": {"--checkpoints": "name", "--drafters": "text", "--out": "out-file"},
    "engine profile": {
        "--checkpoints": "name",
        "--out": "out-file",
        "--steps-out": "out-file",
        "--requests": "text",
    },  # fmt: skip
    "engine curves": {"--checkpoints": "name", "--drafters": "text", "--out": "out-file", "--map": "text"},
    "fidelity": {
        "--checkpoints": "name",
        "--policies": "text",
        "--draft": "name",
        "--cost": "cost-table",
        "--curves": "curves",
        "--out": "out-dir",
    },  # fmt: skip
    "cost fit": {"measured": "measured", "--out": "out-file"},
    "cost check": {"measured": "measured", "--fit": "fit"},
    "cost calibrate": {"runs": "runs-all", "--workloads": "workloads", "--out": "out-file"},
    "validate": {"runs": "runs", "--workloads": "workloads", "--knobs": "knobs", "--out": "out-dir"},
    "curves from-vllm": {"files": "bench", "--out": "out-file", "--into": "curves"},
    "export": {"run_dir": "run-dir", "--out": "out-file"},
    "compare": {"sim_run": "run-dir", "vllm_result": "vllm-result"},
    "validate --spec": {
        "files": "spec-csv",
        "--knobs": "spec-knobs",
        "--bench-pair": "text",
        "--engine-version": "name",
    },  # fmt: skip
    "cost calibrate --spec": {"files": "spec-csv", "--out": "out-file"},
}
NUMBER_TYPES = ("int", "float", "bounded", "_positive", "_positive_int", "_at_least_zero")
#: command -> arguments it needs besides the varied one ({W}: the workspace; {seed:KIND}: a seed file)
NEEDS: dict[str, tuple[str, ...]] = {
    "run": ("--quiet", "--set", "workload.num_requests=20"),
    "disagg": ("--quiet",),
    "plan": ("--draft-schedule", "--cost", "h200-v4flash", "--layers", "32"),
    "trace synth": ("--n", "5"),
    "sweep": ("--model", FAKE, "--quiet"),
    "advise": ("--model", "llama3.1-8b", "--quiet", "--loads", "1,2", "--requests-per-user", "2"),
    "search": ("--slo", "ttft_p90<=2s,itl_p50<=50ms", "--quiet"),
    "cost fit": ("--model", "dense-8b", "--gpu", "h100"),
    "cost check": ("--fit", "{seed:fit}"),
    "cost calibrate": ("--gpu", "h100", "--scale", "0.2"),
    "curves from-vllm": ("--drafter", "fz", "--domain", "chat"),
    "validate --spec": ("--no-loso",),
}
#: (command, flag) -> arguments that flag needs beside it (an advise run row needs its profiles)
WITH = {
    ("advise", "--runs"): ("--row", "1", "--workloads", "{seed:workloads}"),
    ("advise", "--workloads"): ("--runs", "{seed:runs}", "--row", "1"),
    ("advise", "--row"): ("--runs", "{seed:runs}", "--workloads", "{seed:workloads}"),
    ("advise", "--profile"): ("--workloads", "{seed:workloads}"),
    ("cost calibrate", "runs"): ("--workloads", "{seed:workloads}"),
    ("cost calibrate", "--workloads"): (),
    ("validate", "runs"): ("--workloads", "{seed:workloads}"),
}
#: required inputs every variant of the command carries (the varied one replaces its own)
REQUIRED = {
    "run": ("config",),
    "disagg": ("config",),
    "advise": ("--traffic",),
    "search": ("space", "--traffic"),
    "cost calibrate": ("runs", "--workloads"),
    "validate": ("runs", "--workloads"),
}


def role(command: str, flag) -> str:
    """The flag's role: switch, retired, choice, number, text (a validator type) or a ROLES/COMMON entry;
    "unknown" for a plain-string flag in neither table."""
    if flag.switch or flag.dest == "help":
        return "switch"
    named = ROLES.get(command, {}).get(flag.label) or COMMON.get(flag.label)
    if named:
        return named
    if flag.choices is not None:
        return "choice"
    if flag.type_name in NUMBER_TYPES:
        return "number"
    if flag.type_name is not None:
        return "text"
    return "unknown"


def is_input(kind: str) -> bool:
    return kind in SEEDS

"""Search spaces: a sweep file (base, set, axes, zip) over any config key, plus a [search] table.

Role: read SPACE.toml and the `--traffic` given beside it into the candidates of a search (resolved,
keyed `analysis.sweepfile.Cell`s) and the search's options. Axes work over ANY key the cell model knows
(`cost.table`, `server.replicas`, `server.tp`, `drafter.name`, `policy.draft`, `server.max_num_seqs`,
`cost.cudagraph_capture_sizes`, and every key added to the simulator's config later).

    name = "h100-h200-b200"
    base = "../configs/default.toml"        # optional, as in sweeps
    [axes]
    "cost.table" = ["h100-dense70b-tp4", "h200-dense70b-tp4", "b200-dense70b-tp4"]
    "server.replicas" = [1, 2, 3, 4]
    [[zip]]                                 # drafter arms vary together
    label = ["no-spec", "MTP-1", "DSpark"]
    "drafter.name" = ["none", "mtp", "dspark"]
    "drafter.gamma" = [0, 1, 7]
    "policy.name" = ["ar", "fixed", "dspark"]
    "policy.k" = ["none", 1, "none"]
    [search]                                # optional; every key has a default
    objective = "cost"                      # "cost" ($ per million output tokens) or "goodput_per_gpu"
    rungs = [0.1, 0.3, 1.0]                 # fidelities: fractions of the traffic's requests, last = 1
    eta = 3                                 # successive halving keeps ~1/eta of the ranked survivors
    keep = 20                               # ... but never fewer than this many
    tolerance = [0.5, 0.25]                 # per rung before the last: SLO slack before a drop
    grace = 0.1                             # screen: drop only below capacity·(1 + grace) < load
    group = ["cost.table", "series"]       # halve within each group (keep applies per group): the
                                            # best of every GPU kind × series reaches full length
    top = 5                                 # price bound: judge cheapest first, in price tiers, and drop
                                            # what cannot rank in the top 5 (per group; 0: off)
    throughput_slack = 0.1                  # ... assuming no SLO-meeting throughput is 10 % over the best
    model = "meta-llama/Llama-3.3-70B-Instruct"    # the vllm serve line's model (else a placeholder)
    draft_models = { eagle3 = "org/eagle3-head" }   # drafter name -> its draft model for vLLM
    [search.gpus]                           # cost tables that are not built-ins -> GPU kind (prices)
    "profiles/my_h100.csv" = "h100"

Traffic (`--traffic`): a trace (a file or a built-in name such as azure2023-conv, replayed whole:
workload.kind = "trace", num_requests = 0) or a `specbed run` config whose [workload] table is the
traffic. It is applied after the space's base and before its `set` and axes, so a space may still
override a traffic key (e.g. set = ["workload.speedup=2"]).

May import: the standard library, `specsched.io.errors`, `specsched.io.inputs`, `analysis.sweepfile`,
`analysis.model`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from analysis.model import Override, flatten
from analysis.sweepfile import Sweep, _line, parse_sweep
from specsched.io import inputs
from specsched.io.errors import InputError

OBJECTIVES = ("cost", "goodput_per_gpu")
SEARCH_KEYS = (
    "objective",
    "rungs",
    "eta",
    "keep",
    "tolerance",
    "grace",
    "group",
    "model",
    "draft_models",
    "gpus",
    "top",
    "throughput_slack",
)


@dataclass(frozen=True)
class Options:
    objective: str = "cost"
    rungs: tuple[float, ...] = (0.1, 0.3, 1.0)
    eta: float = 3.0
    keep: int = 20
    tolerance: tuple[float, ...] = (0.5, 0.25)
    grace: float = 0.1
    group: tuple[str, ...] = ()
    model: str | None = None
    draft_models: dict[str, str] = field(default_factory=dict)
    gpus: dict[str, str] = field(default_factory=dict)
    top: int = 5
    throughput_slack: float = 0.1

    def tol(self, rung: int) -> float:
        """SLO slack at rung `rung` (0 at the last: full length is judged exactly)."""
        if rung >= len(self.rungs) - 1:
            return 0.0
        return self.tolerance[min(rung, len(self.tolerance) - 1)] if self.tolerance else 0.0


@dataclass(frozen=True)
class Space:
    sweep: Sweep
    options: Options
    text: str


def load_space(path: str | Path) -> Space:
    """A `Space` from SPACE.toml; InputError naming the file, line and key when anything is wrong."""
    file = str(path)
    return parse_space(inputs.read_text(path, what="space file", limit=inputs.LIMITS["config"]), file)


def parse_space(text: str, file: str | None = None) -> Space:
    """A `Space` from TOML text (`file` names it in errors and anchors relative paths)."""
    sweep = parse_sweep(text, file, extra=("search",))
    data = inputs.parse_toml(text, file or "space")  # parse_sweep proved it is TOML
    return Space(sweep, _options(data.get("search", {}), text, file), text)


def _options(table, text: str, file: str) -> Options:
    def fail(message: str, key: str) -> InputError:
        return InputError(message, file=file, line=_line(text, key), field=f"search.{key}")

    if not isinstance(table, dict):
        raise InputError("expected a table [search]", file=file, field="search")
    for key in table:
        if key not in SEARCH_KEYS:
            raise fail(f"unknown key (known: {', '.join(SEARCH_KEYS)})", key)
    opts = Options()
    objective = table.get("objective", opts.objective)
    if objective not in OBJECTIVES:
        raise fail(f"expected one of {', '.join(OBJECTIVES)}, got {objective!r}", "objective")
    rungs = _floats(table.get("rungs", list(opts.rungs)), fail, "rungs", lo=0.0, hi=1.0)
    if not rungs or rungs[-1] != 1.0 or any(b <= a for a, b in zip(rungs, rungs[1:])):
        raise fail("expected increasing fractions in (0, 1] ending with 1 (full length)", "rungs")
    tolerance = _floats(table.get("tolerance", list(opts.tolerance)), fail, "tolerance", lo=-1e-300, hi=10.0)
    eta = _number(table.get("eta", opts.eta), fail, "eta", lo=1.0, hi=1000.0)
    keep = table.get("keep", opts.keep)
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= 1_000_000:
        raise fail(f"expected an integer ≥ 1, got {keep!r}", "keep")
    grace = _number(table.get("grace", opts.grace), fail, "grace", lo=-1e-300, hi=10.0)
    top = table.get("top", opts.top)
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= 1_000_000:
        raise fail(f"expected an integer ≥ 0 (0: no price bound), got {top!r}", "top")
    slack = table.get("throughput_slack", opts.throughput_slack)
    slack = _number(slack, fail, "throughput_slack", lo=-1e-300, hi=10.0)
    group = table.get("group", [])
    if not isinstance(group, list) or not all(isinstance(g, str) and g for g in group):
        raise fail('expected a list of swept keys or "series"', "group")
    model = table.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise fail("expected a model name (a Hugging Face id or path)", "model")
    maps = {}
    for key in ("draft_models", "gpus"):
        value = table.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) and v for v in value.values()):
            raise fail('expected a table of name = "string"', key)
        maps[key] = {str(k): v for k, v in value.items()}
    return Options(
        objective, rungs, eta, keep, tolerance, grace, tuple(group), model, maps["draft_models"],
        maps["gpus"], top, slack,
    )  # fmt: skip


def _number(value, fail, key: str, *, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise fail(f"expected a number, got {value!r}", key)
    if not lo < value <= hi:
        raise fail(f"expected a number in ({max(lo, 0):g}, {hi:g}], got {value!r}", key)
    return float(value)


def _floats(values, fail, key: str, *, lo: float, hi: float) -> tuple[float, ...]:
    if not isinstance(values, list):
        raise fail("expected a list of numbers", key)
    return tuple(_number(v, fail, key, lo=lo, hi=hi) for v in values)


def traffic_overrides(spec: str, speedup: float | None = None) -> list[Override]:
    """The workload overrides of `--traffic` (a trace, or a config TOML's [workload]) and `--speedup`."""
    where = ("--traffic", None)
    path = Path(spec)
    if path.suffix.lower() == ".toml":
        text = inputs.read_text(path, what="traffic config", limit=inputs.LIMITS["config"])
        data = inputs.parse_toml(text, spec)
        workload = data.get("workload")
        if not isinstance(workload, dict) or not workload:
            raise InputError("a traffic config needs a [workload] table", file=spec, field="workload")
        here = path.resolve().parent
        out: list[Override] = []
        for key, value in flatten({"workload": workload}).items():
            if key == "workload.trace" and isinstance(value, str) and (here / value).exists():
                value = str(here / value)
            out.append((key, value, (spec, _line(text, key))))
    else:
        if not spec.strip():
            raise InputError("expected a trace (file or built-in name) or a config .toml", field="--traffic")
        trace = str(path.resolve()) if path.exists() else spec
        out = [("workload.kind", "trace", where), ("workload.trace", trace, where),
               ("workload.num_requests", 0, where)]  # fmt: skip
    if speedup is not None:
        if not (math.isfinite(speedup) and speedup > 0):
            raise InputError(f"must be > 0, got {speedup:g}", field="--speedup")
        out.append(("workload.speedup", speedup, ("--speedup", None)))
    return out


def with_traffic(sweep: Sweep, overrides: list[Override]) -> Sweep:
    """`sweep` with the traffic applied after its base and before its own `set` and axes."""
    return dataclasses.replace(sweep, sets=(*overrides, *sweep.sets))

"""Sweep files: a base config plus axes, expanded into cells with stable keys.

Role: read and validate a sweep TOML, expand it into the cartesian product of its axes, resolve every
cell's config through the cell model (`analysis.model`), and key each cell by a hash of its resolved
config. Nothing here runs a cell or touches an output folder.

Sweep file (TOML; unknown top-level keys are errors):

    name = "demo"                        # optional label, shown in reports
    base = "base.toml"                   # optional: a `specbed run` config file (relative to this file)
    # ...or an inline base config:       [base] seed = 0  /  [base.workload] kind = "closed" ...
    set = ["workload.num_requests=400"]  # optional fixed `--set`-style overrides, applied after base

    [axes]                               # each key: a non-empty list; cells = the cartesian product
    "workload.concurrency" = [8, 16, 32] # (dotted keys quoted, or nested tables: [axes.workload])
    "cost.table" = ["h200-v4flash", "h200-v4pro"]
    seed = [0, 1]

    [[zip]]                              # optional: keys that vary together (equal-length lists); one axis
    label = ["MTP-1", "DSpark"]          # optional series names for the report
    "drafter.name" = ["mtp", "dspark"]
    "policy.name" = ["fixed", "dspark"]
    "policy.k" = [1, "none"]             # "none" = unset (the default)

    [analysis]                           # optional; used by `specbed pareto/report`
    baseline = "MTP-1"                   # series to compare against
    slo = [80, 120]                      # per-user tok/s for iso-SLO gains, or a table facet -> list
    x = "throughput_tok_s_per_gpu"       # throughput metric;  y = per-user speed metric
    y = "per_user_tok_s_mean"
    load = ["workload.concurrency"]      # axes that trace a frontier (default: rate, concurrency, ...)
    facet = ["cost.table"]               # axes that split panels (default: every other non-series axis)

TOML puts every key after a [table] header into that table: write name, base and set first.
Order: zip groups first (outermost), then axes, in file order; the last axis varies fastest. A cell's
series is its zip label when given, else the model's label of its config (e.g. "fixed(k=1)/mtp"). Cells
with identical resolved configs share one key and are run once — unless they carry different zip labels,
which is an error (one series would silently vanish).

May import: the standard library, `specsched.io.errors`, `specsched.io.inputs`, `analysis.model`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from analysis.model import Override, flatten
from specsched.io import inputs
from specsched.io.errors import InputError

TOP_KEYS = ("name", "base", "set", "axes", "zip", "analysis")
ANALYSIS_KEYS = ("baseline", "slo", "x", "y", "load", "facet")
DEFAULT_X = "throughput_tok_s_per_gpu"
DEFAULT_Y = "per_user_tok_s_mean"
#: axes that move a policy along its frontier (load), unless the sweep file says otherwise
LOAD_KEYS = (
    "workload.rate",
    "workload.concurrency",
    "workload.think_s",
    "server.max_num_seqs",
    "workload.speedup",
)
#: keys the model's default series label already spells out
LABELLED_KEYS = ("policy.name", "policy.k", "policy.threshold", "policy.delay", "drafter.name")
#: config values that name files, resolved relative to the sweep file when such a file exists there
PATH_KEYS = ("workload.trace", "drafter.curves", "drafter.cost", "cost.table", "cost.policy_table",
             "server.cost", "server.policy_cost")  # the last two: the old spelling of the [cost] keys


@dataclass(frozen=True)
class Axis:
    """One axis: `keys` vary together through `values` (tuples, one per point); `labels` names them."""

    keys: tuple[str, ...]
    values: tuple[tuple[object, ...], ...]
    labels: tuple[str, ...] | None
    lines: tuple[int | None, ...]


@dataclass(frozen=True)
class AnalysisSpec:
    baseline: str | None = None
    slo: dict[str, tuple[float, ...]] | tuple[float, ...] = ()
    x: str = DEFAULT_X
    y: str = DEFAULT_Y
    load: tuple[str, ...] | None = None
    facet: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Sweep:
    name: str
    file: str | None
    base_path: Path | None
    base_table: dict | None
    sets: tuple[Override, ...]
    axes: tuple[Axis, ...]
    analysis: AnalysisSpec = field(default_factory=AnalysisSpec)
    label_line: int | None = None  # line of the first zip `label` (errors about series names)


@dataclass(frozen=True)
class Cell:
    """One run: `config` is the resolved config, `key` its hash; `axes` the swept values (dotted keys)."""

    index: int
    key: str
    axes: dict
    series: str
    facet: str
    point: str
    config: dict

    def row_head(self) -> dict:
        return {
            "key": self.key,
            "index": self.index,
            "series": self.series,
            "facet": self.facet,
            "point": self.point,
            "axes": self.axes,
            "config": self.config,
        }


def config_key(config: dict) -> str:
    """Stable 16-hex key of a resolved config (canonical JSON, sorted keys)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _line(text: str, key: str) -> int | None:
    """Best-effort line of `key` (last dotted part, quoted or bare) in the sweep text."""
    leaf = key.split(".")[-1]
    pattern = re.compile(
        rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)}|{re.escape(leaf)})\s*="
    )
    for lineno, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return lineno
    return None


def parse_sweep(text: str, file: str | None = None, *, extra: tuple[str, ...] = ()) -> Sweep:
    """A `Sweep` from TOML text (`file` only names it in errors and anchors relative paths).

    extra: further top-level keys the caller reads itself (e.g. `specbed search`'s [search]); skipped here.
    """
    data = inputs.parse_toml(text, file or "sweep")  # digit, depth and int64 limits, one line
    with inputs.reading(file or "sweep"):
        return _parse_sweep(data, text, file, extra)


def _parse_sweep(data: dict, text: str, file: str | None, extra: tuple[str, ...] = ()) -> Sweep:
    def fail(message: str, key: str) -> InputError:
        return InputError(message, file=file, line=_line(text, key), field=key)

    for key in data:
        if key not in TOP_KEYS and key not in extra:
            known = ", ".join((*TOP_KEYS, *extra))
            return _raise(fail(f"unknown sweep key (known: {known})", key))
    here = Path(file).resolve().parent if file else Path.cwd()
    name = data.get("name", Path(file).stem if file else "sweep")
    if not isinstance(name, str):
        raise fail("expected a string", "name")
    base_path, base_table = None, None
    base = data.get("base")
    if isinstance(base, str):
        base_path = (here / base) if not Path(base).is_absolute() else Path(base)
        if not os.path.isfile(base_path):  # False (never OSError) for a name too long
            raise fail(f"base config file not found: {base_path}", "base")
    elif isinstance(base, dict):
        base_table = {k: (v, _line(text, k)) for k, v in _anchor_paths(flatten(base), here).items()}
    elif base is not None:
        raise fail("expected a config file path or a table [base]", "base")
    sets = _parse_sets(data.get("set", []), fail, here, text, file)
    axes: list[Axis] = []
    zips = data.get("zip", [])
    if isinstance(zips, dict):
        zips = [zips]
    if not isinstance(zips, list) or not all(isinstance(z, dict) for z in zips):
        raise fail("expected [[zip]] tables", "zip")
    for group in zips:
        axes.append(_parse_zip(group, fail, here, text))
    raw_axes = data.get("axes", {})
    if not isinstance(raw_axes, dict):
        raise fail("expected a table [axes]", "axes")
    for key, values in flatten(raw_axes).items():
        if not isinstance(values, list):
            raise fail("an axis must be a list of values", key)
        if not values:
            raise fail("empty axis (give at least one value)", key)
        vals = tuple((_anchor(key, v, here),) for v in values)
        axes.append(Axis((key,), vals, None, (_line(text, key),)))
    seen: set[str] = set()
    for axis in axes:
        for key in axis.keys:
            if key in seen:
                raise fail("swept twice (in two axes or zip groups)", key)
            seen.add(key)
    analysis = _parse_analysis(data.get("analysis", {}), fail)
    return Sweep(name, file, base_path, base_table, sets, tuple(axes), analysis, _line(text, "label"))


def load_sweep(path: str | Path) -> Sweep:
    text = inputs.read_text(path, what="sweep file", limit=inputs.LIMITS["config"])  # regular, capped
    return parse_sweep(text, str(path))


def _raise(err: InputError):
    raise err


def _anchor(key: str, value: object, here: Path) -> object:
    if (
        key in PATH_KEYS
        and isinstance(value, str)
        and value.strip()  # "" must stay "" (an error later), not become this folder
        and not Path(value).is_absolute()
        and os.path.exists(here / value)
    ):
        return str(here / value)
    return value


def _anchor_paths(table: dict, here: Path) -> dict:
    return {k: _anchor(k, v, here) for k, v in table.items()}


def _parse_sets(sets, fail, here: Path, text: str, file: str | None) -> tuple[Override, ...]:
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise fail("expected a list of 'section.key=value' strings", "set")
    out = []
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise fail(f"expected 'section.key=value', got {item!r}", "set")
        key = key.strip()
        if "\n" in value or "\r" in value:  # TOML would read only the first line: refuse, never truncate
            raise fail(f"a set value spans lines: {item!r}", "set")
        out.append((key, _anchor(key, _typed(value.strip()), here), (file, _line(text, "set"))))
    return tuple(out)


def _typed(text: str) -> object:
    """A `set` value's text as the TOML value it spells (7 -> int, 0.5 -> float, else the string)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError, ValueError, KeyError):
        return text


def _parse_zip(group: dict, fail, here: Path, text: str) -> Axis:
    labels = group.get("label")
    columns = {k: v for k, v in flatten({k: v for k, v in group.items() if k != "label"}).items()}
    if not columns:
        raise fail("a [[zip]] group needs at least one key", "zip")
    lengths = set()
    for key, values in columns.items():
        if not isinstance(values, list):
            raise fail("a zipped key must be a list of values", key)
        if not values:
            raise fail("empty axis (give at least one value)", key)
        lengths.add(len(values))
    if len(lengths) != 1:
        raise fail(f"zipped lists differ in length ({sorted(lengths)})", next(iter(columns)))
    n = lengths.pop()
    if labels is not None:
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or len(labels) != n:
            raise fail(f"expected {n} label strings, one per zipped value", "label")
        if len(set(labels)) != n:
            raise fail("labels must be distinct", "label")
    keys = tuple(columns)
    values = tuple(tuple(_anchor(k, columns[k][i], here) for k in keys) for i in range(n))
    return Axis(keys, values, tuple(labels) if labels else None, tuple(_line(text, k) for k in keys))


def _parse_analysis(table, fail) -> AnalysisSpec:
    if not isinstance(table, dict):
        raise fail("expected a table [analysis]", "analysis")
    for key in table:
        if key not in ANALYSIS_KEYS:
            raise fail(f"unknown analysis key (known: {', '.join(ANALYSIS_KEYS)})", key)
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise fail("expected a series name", "baseline")
    slo = table.get("slo", [])
    if isinstance(slo, dict):
        slo = {k: _numbers(v, fail, "slo") for k, v in slo.items()}
    else:
        slo = _numbers(slo, fail, "slo")
    strs = {}
    for key in ("x", "y"):
        value = table.get(key, DEFAULT_X if key == "x" else DEFAULT_Y)
        if not isinstance(value, str):
            raise fail("expected a metric name", key)
        strs[key] = value
    lists = {}
    for key in ("load", "facet"):
        value = table.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise fail("expected a list of dotted keys", key)
        lists[key] = None if value is None else tuple(value)
    return AnalysisSpec(baseline, slo, strs["x"], strs["y"], lists["load"], lists["facet"])


def _numbers(value, fail, key: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value
    ):
        raise fail("expected a list of positive numbers (per-user tokens/s)", key)
    return tuple(float(v) for v in value)


def _role(key: str, sweep: Sweep) -> str:
    """'series', 'load', 'seed' or 'facet' for a swept key."""
    if key == "seed":
        return "seed"
    load = sweep.analysis.load if sweep.analysis.load is not None else LOAD_KEYS
    if key in load:
        return "load"
    if sweep.analysis.facet is not None:
        return "facet" if key in sweep.analysis.facet else "series"
    return "series" if key.split(".")[0] in ("policy", "drafter") else "facet"


def axis_role(axis: Axis, sweep: Sweep) -> str:
    """Role of a whole axis: a zip group is "load" if any key is, else "series" if any key is, ..."""
    roles = {_role(key, sweep) for key in axis.keys}
    for role in ("load", "series", "facet"):
        if role in roles:
            return role
    return "seed"


def expand(sweep: Sweep, model) -> list[Cell]:
    """Every cell of the sweep, resolved and keyed, in order; duplicates (same config) merged."""
    roles = [axis_role(axis, sweep) for axis in sweep.axes]
    cells: list[Cell] = []
    seen: dict[str, str] = {}  # key -> series of the cell kept
    for combo in itertools.product(*(range(len(a.values)) for a in sweep.axes)):
        base = [(k, v, (sweep.file, line)) for k, (v, line) in (sweep.base_table or {}).items()]
        overrides: list[Override] = [*base, *sweep.sets]
        axes_vals: dict[str, object] = {}
        labels: list[str] = []
        extra: list[str] = []
        facet_parts: list[str] = []
        point_parts: list[str] = []
        for axis, role, i in zip(sweep.axes, roles, combo):
            for key, value, line in zip(axis.keys, axis.values[i], axis.lines):
                overrides.append((key, value, (sweep.file, line)))
                axes_vals[key] = value
                if role == "facet":
                    facet_parts.append(f"{key.split('.')[-1]}={value}")
                elif role == "load":
                    point_parts.append(f"{key.split('.')[-1]}={value}")
                elif role == "series" and axis.labels is None and key not in LABELLED_KEYS:
                    extra.append(f"{key.split('.')[-1]}={value}")
            if axis.labels is not None:
                labels.append(axis.labels[i])
        config = model.resolve(sweep.base_path, None, overrides)
        key = config_key(config)
        series = " ".join([*(labels or [model.label(config)]), *extra])
        if key in seen:
            if seen[key] != series:  # two named series, one config: merging would drop a series silently
                raise InputError(
                    f"series {seen[key]!r} and {series!r} resolve to identical configs (one would be "
                    "dropped); make their zipped values differ or remove one",
                    file=sweep.file,
                    line=sweep.label_line,
                    field="label",
                )
            continue
        seen[key] = series
        cells.append(
            Cell(len(cells), key, axes_vals, series, ", ".join(facet_parts), ", ".join(point_parts), config)
        )
    return cells


def fingerprint(cells: list[Cell], model_name: str) -> str:
    """Identity of a sweep's results folder: the model and the set of cell keys."""
    text = model_name + "\n" + "\n".join(sorted(c.key for c in cells))
    return hashlib.sha256(text.encode()).hexdigest()[:16]

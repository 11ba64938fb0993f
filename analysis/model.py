"""Cell models: what a sweep runs for each cell — resolve a config, then run it to a summary.

Role: the one seam between the sweep machinery (`analysis.sweepfile`, `analysis.runner`) and what is swept.
A cell model is any picklable object with

- `name: str` — recorded in the sweep manifest (a folder holds the results of one model);
- `resolve(base_path, base_table, overrides) -> dict` — the validated, fully resolved config of one cell
  as a nested plain dict (JSON-able); `overrides` is a list of `(dotted key, TOML value, where)` applied in
  order, `where` naming the sweep file (for error messages: `(file, line)`); raises `InputError` naming the
  key for an unknown key, a value of the wrong type or out of range;
- `run(config: dict) -> dict` — the summary metrics of one run (flat, JSON scalars);
- `label(config: dict) -> str` — the default series name of a cell (e.g. "fixed(k=1)/mtp").

`SimModel` (the default) drives the serving simulator: configs go through `sim.config_io.load_config`
(the same loader and validation as `specbed run --set`), runs through `sim.simulate`. Other models (tests'
fakes, a future engine runner) are picked with `specbed sweep --model module:attr`.

May import: the standard library, numpy, `specsched`, and `sim` (lazily, inside methods, so that importing
`analysis` stays cheap and works while `sim` is absent).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import typing
from pathlib import Path

from specsched.io import inputs
from specsched.io.errors import InputError

Where = tuple[str | None, int | None]
Override = tuple[str, object, Where]


def flatten(table: dict, prefix: str = "") -> dict[str, object]:
    """{"a": {"b": 1}, "c": 2} -> {"a.b": 1, "c": 2} (lists and scalars are leaves)."""
    out: dict[str, object] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and dotted != "workload.mix":
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def set_text(value: object) -> str:
    """A config value as the text of a `--set` (None -> "none"; lists -> "a,b,c")."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ",".join(set_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={set_text(v)}" for k, v in value.items())
    return str(value)


def scalar_summary(summary: dict) -> dict[str, object]:
    """The JSON-scalar entries of a summary (numpy scalars converted; arrays and nested values dropped)."""
    out: dict[str, object] = {}
    for key, value in summary.items():
        if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()
        if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
            out[key] = value
        elif isinstance(value, float):
            out[key] = value if math.isfinite(value) else None
    return out


def load_model(spec: str | None):
    """The cell model named `module:attr` (None: the simulator). InputError if it cannot be imported."""
    if spec is None:
        return SimModel()
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InputError(f"expected module:attr, got {spec!r}", field="--model")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
        obj = obj() if isinstance(obj, type) else obj
    except (ImportError, AttributeError, TypeError, ValueError) as err:  # TypeError: a class needing args
        raise InputError(f"cannot load {spec!r}: {err}", field="--model") from None
    missing = [m for m in ("resolve", "run", "label") if not callable(getattr(obj, m, None))]
    if missing or not isinstance(getattr(obj, "name", None), str):  # e.g. json:dumps, a function
        lacks = ", ".join(missing or ["a name"])
        raise InputError(
            f"{spec!r} is not a cell model (it lacks {lacks}; see analysis.model)", field="--model"
        )
    return obj


class SimModel:
    """Cells of the serving simulator (`sim`): configs are `SimConfig`s, summaries `summary.json`."""

    name = "sim"

    def schema(self) -> dict[str, object]:
        """{dotted key: type annotation} of every config key."""
        from sim.config import SimConfig

        out: dict[str, object] = {"seed": int}
        hints = typing.get_type_hints(SimConfig)
        for section in SimConfig.SECTIONS:
            cls = hints[section]
            sub = typing.get_type_hints(cls)
            for f in dataclasses.fields(cls):
                out[f"{section}.{f.name}"] = sub[f.name]
        from sim.deploy.keys import COST_KEYS  # the [cost] section: a view of [server]'s pricing fields

        out.update({f"cost.{key}": out.pop(f"server.{name}") for key, name in COST_KEYS.items()})
        return out

    def resolve(self, base_path: Path | None, base_table: dict | None, overrides: list[Override]) -> dict:
        from sim.config_io import coerce, config_to_dict, load_config

        schema = self.schema()
        items: list[Override] = [(k, v, (None, None)) for k, v in flatten(base_table or {}).items()]
        texts: list[str] = []
        origin: dict[str, Where] = {}
        for key, value, where in items + list(overrides):
            key = _respelled(key, where)
            if key not in schema:
                section = key.rpartition(".")[0]
                known = [k for k in schema if k.rpartition(".")[0] == section]
                known = known or sorted({k.split(".")[0] for k in schema})
                raise InputError(
                    f"unknown config key (known here: {', '.join(known)})",
                    file=where[0],
                    line=where[1],
                    field=key,
                )
            if not (isinstance(value, str) and value.strip().lower() in ("none", "null")):
                try:
                    value = coerce(key, value, schema[key], from_text=False)
                except ValueError as err:
                    raise InputError(str(err), file=where[0], line=where[1], field=key) from None
            texts.append(f"{key}={set_text(value)}")
            origin[key] = where
        try:
            cfg = load_config(base_path, texts)
        except InputError as err:
            file, line = origin.get(err.field or "", (err.file, err.line))
            message = err.message.removesuffix(" (in --set)")
            raise InputError(message, file=file or err.file, line=line, field=err.field) from None
        self._check_files(cfg, origin)
        return config_to_dict(cfg)

    def _check_files(self, cfg, origin: dict[str, Where]) -> None:
        """Read every file a cell names (cost tables, curves, trace) now, before the results folder is
        touched; each distinct set of files once per model (a sweep resolves hundreds of cells)."""
        from sim.run import check_inputs

        s, d, w = cfg.server, cfg.drafter, cfg.workload
        names = (s.cost, s.cost_mode, s.layers, s.policy_cost, s.tp, d.name, d.effective_gamma, d.curves,
                 getattr(d, "cost", None), w.trace)  # fmt: skip
        files = (s.cost, s.policy_cost, d.curves, getattr(d, "cost", None), w.trace)
        paths = [Path(p) for p in files if isinstance(p, str)]
        stamp = (names, w.kind, w.input_dist, w.output_dist, tuple(_mtime(p) for p in paths))
        checked = self.__dict__.setdefault("_checked_files", set())
        if stamp in checked:
            return
        try:
            check_inputs(cfg)
        except InputError as err:
            if err.file is None:  # no data file to name: point at the sweep line that set the key
                file, line = origin.get(err.field or "", (None, None))
                raise InputError(err.message, file=file, line=line, field=err.field) from None
            raise
        checked.add(stamp)

    def run(self, config: dict) -> dict:
        import sim
        from sim.config_io import load_config

        texts = [f"{k}={set_text(v)}" for k, v in flatten(config).items()]
        result = sim.simulate(load_config(None, texts))
        summary = result.summary if hasattr(result, "summary") else result
        return scalar_summary(summary)

    def label(self, config: dict) -> str:
        return policy_label(config)


def _respelled(key: str, where: Where) -> str:
    """`key`, or the `[cost]` name of an old `server.FIELD` spelling of a pricing key (with a warning)."""
    from sim.deploy.keys import COST_NAME

    section, _, name = key.partition(".")
    if section != "server" or name not in COST_NAME:
        return key
    new = f"cost.{COST_NAME[name]}"
    message = f"a [cost] key now: write it as {new} (read as such)"
    inputs.warn(message, file=where[0], line=where[1], field=key)
    return new


def policy_label(config: dict) -> str:
    """'ar', 'fixed(k=1)/mtp', 'dspark/dspark', 'dspark_global(delay=2)/dspark' from a resolved config."""
    policy = config.get("policy", {})
    name = str(policy.get("name", "?"))
    from specsched.registry import all_params  # every declared parameter (one registry)

    params = [f"{k}={policy[k]}" for k in all_params() if policy.get(k) is not None]
    text = f"{name}({', '.join(params)})" if params else name
    drafter = config.get("drafter", {}).get("name")
    if name == "ar" or drafter in (None, "none"):
        return text
    return f"{text}/{drafter}"


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except (OSError, ValueError):
        return None

"""Reading, overriding and writing `SimConfig`: TOML files, `--set section.key=value`, TOML/JSON dumps.

Role: turn user text into a validated `SimConfig`, or one `InputError` naming the file, line and key.
Types come from the dataclass annotations: `--set workload.rate=8` becomes a float, `drafter.gamma=5` an
int, `policy.k=none` None, `workload.mix=0.2,0.4,0.4` (or `chat=0.2,math=0.4,code=0.4`) a tuple.
Relative paths in a TOML file (workload.trace, drafter.curves, drafter.cost, cost.table,
cost.policy_table) are taken relative to the file's directory when such a file exists there; paths given
with --set are relative to the working directory.

The `[cost]` section (`sim.deploy.keys`) is a view of `ServerConfig`'s pricing fields: `cost.KEY` is read
into its field, written back as `cost.KEY`; the old spelling `server.FIELD` reads with a warning.

May import: the standard library, `sim.config`, `sim.curves`, `sim.deploy.keys`, `specsched.io.errors`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import types
import typing
from pathlib import Path

from sim.config import SimConfig
from sim.curves import DOMAINS
from sim.deploy.keys import COST_KEYS, COST_NAME, DEPLOYMENT_KEYS, TABLE_KEYS
from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.io.results import dumps_json

_PATH_KEYS = {("workload", "trace"), ("drafter", "curves"), ("drafter", "cost"), ("server", "cost"),
              ("server", "policy_cost")}  # fmt: skip (stored places: cost.table, cost.policy_table)
_NONE_WORDS = ("none", "null")
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")


def _section_types() -> dict[str, type]:
    hints = typing.get_type_hints(SimConfig)
    return {name: hints[name] for name in SimConfig.SECTIONS}


def _field_types(cls: type) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _schema() -> dict[str, dict[str, object]]:
    """{section: {key: annotation}}; section "" holds the top-level keys (seed)."""
    out: dict[str, dict[str, object]] = {"": {"seed": int}}
    for name, cls in _section_types().items():
        out[name] = _field_types(cls)
    out["cost"] = {key: out["server"][fieldname] for key, fieldname in COST_KEYS.items()}
    return out


def _place(section: str, key: str, file: str | None, line: int | None) -> tuple[str, str, str]:
    """(section, field) where a key is stored and its dotted `[cost]` name where it is one: `cost.KEY` in
    its `ServerConfig` field; the old `server.FIELD` of a cost key too, with a warning."""
    if section == "cost":
        return "server", COST_KEYS[key], f"cost.{key}"
    if section == "server" and key in COST_NAME:
        new = f"cost.{COST_NAME[key]}"
        inputs.warn(f"a [cost] key now: write it as {new} (read as such)", file=file, line=line,
                    field=f"server.{key}")  # fmt: skip
        return "server", key, new
    return section, key, f"{section}.{key}" if section else key


# -- type coercion -----------------------------------------------------------------------------------------


def _optional(tp) -> tuple[object, bool]:
    """(inner type, allows None) for `X | None`."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else tp), len(args) < len(typing.get_args(tp))
    return tp, False


def _type_name(tp) -> str:
    inner, opt = _optional(tp)
    name = "list of numbers" if typing.get_origin(inner) is tuple else getattr(inner, "__name__", str(inner))
    return f"{name} or none" if opt else name


def coerce(key: str, value, tp, *, from_text: bool):
    """`value` (a TOML value, or the text of a --set) as annotation `tp`; ValueError saying why not."""
    inner, optional = _optional(tp)
    if from_text and isinstance(value, str) and value.strip().lower() in _NONE_WORDS and optional:
        return None
    if inner is bool:
        if isinstance(value, bool):
            return value
        if from_text and isinstance(value, str) and value.strip().lower() in _TRUE_WORDS + _FALSE_WORDS:
            return value.strip().lower() in _TRUE_WORDS
    elif inner is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        number = _number(value, from_text)
        if isinstance(number, int):  # "20" or "+20" in a --set (TOML reads +20 as an int too)
            return number
        if number is not None and math.isfinite(number) and float(number).is_integer():
            # 20.0 / 2e1 name a count as a float: refused alike from a file and a --set, not truncated
            raise ValueError(f"expected {_type_name(tp)}, got {value!r}: write it as {int(number)}")
    elif inner is float:
        number = _number(value, from_text)
        if number is not None:
            return float(number)
    elif inner is str:
        if isinstance(value, str) and "\x00" in value:  # no file or name holds one; the OS would raise
            raise ValueError(f"contains a NUL character: {value!r}")
        if isinstance(value, str):
            return value
    elif typing.get_origin(inner) is tuple:
        return _coerce_shares(key, value, from_text)
    raise ValueError(f"expected {_type_name(tp)}, got {value!r}")


def _number(value, from_text: bool) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if from_text and isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _coerce_shares(key: str, value, from_text: bool) -> tuple[float, ...]:
    """A tuple of numbers: a TOML list, a table keyed by domain (for mix), or 'a,b,c' / 'chat=a,...'."""
    if from_text and isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if parts and all("=" in p for p in parts):
            value = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip() for p in parts}
        else:
            value = parts
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(DOMAINS))
        if unknown:
            raise ValueError(f"unknown domain {unknown[0]!r} (choose from {', '.join(DOMAINS)})")
        value = [value.get(d, 0.0) for d in DOMAINS]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of numbers, got {value!r}")
    out = []
    for item in value:
        number = _number(item, from_text)
        if number is None:
            raise ValueError(f"expected numbers, got {item!r}")
        out.append(float(number))
    return tuple(out)


# -- loading -----------------------------------------------------------------------------------------------


def _line_of(text: str, section: str, key: str) -> int | None:
    """Best-effort line number of `key` in `[section]` (or `section.key` at top level) of a TOML text."""
    current = ""
    plain = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    dotted = re.compile(rf"^\s*{re.escape(section)}\.{re.escape(key)}\s*=") if section else None
    for lineno, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
        if header:
            current = header.group(1).strip().strip("\"'")
            continue
        if current == section and plain.match(line):
            return lineno
        if current == "" and dotted is not None and dotted.match(line):
            return lineno
    return None


def parse_override(item: str) -> tuple[str, str, str]:
    """'section.key=value' (or 'seed=3') -> (section, key, value text); InputError if malformed."""
    if "=" not in item:
        raise InputError(f"--set expects section.key=value, got {item!r}", field=item)
    name, value = item.split("=", 1)
    name = name.strip()
    section, _, key = name.rpartition(".")
    if not key:
        raise InputError(f"--set expects section.key=value, got {item!r}", field=item)
    return section, key, value


def _unknown(section: str, key: str, schema: dict) -> InputError:
    if section not in schema:
        choices = ", ".join(s for s in schema if s)
        return InputError(
            f"unknown section {section!r} (sections: {choices}; top-level: seed)",
            field=f"{section}.{key}" if section else key,
        )
    keys = ", ".join(schema[section])
    return InputError(f"unknown key (known keys: {keys})", field=f"{section}.{key}" if section else key)


def load_config(
    path: str | Path | None = None, overrides: typing.Iterable[str] = (), *, skip: typing.Collection[str] = ()
) -> SimConfig:
    """The config in TOML file `path` (None: the defaults) with `--set` overrides applied, validated.
    Top-level tables named in `skip` are left to the caller (`sim.disagg.config` reads `[[pool]]` and
    `[handoff]` so); `--set` items for them are the caller's too.

    Raises `InputError` naming the file, line and key (or the --set item) for unreadable files, TOML syntax
    errors, unknown sections or keys, wrong types and out-of-range values.
    """
    schema = _schema()
    values: dict[str, dict[str, object]] = {s: {} for s in schema}
    origin: dict[str, tuple[str | None, int | None]] = {}  # "section.key" -> (file, line)
    fname = None if path is None else str(path)
    if path is not None:
        text = inputs.read_text(path, what="config", limit=inputs.LIMITS["config"])  # regular, capped
        data = inputs.parse_toml(text, fname)  # digit, depth and int64 limits: one line naming the file
        base = Path(path).parent
        for top, content in data.items():
            if top in skip:
                continue
            if top in schema[""]:
                items = [("", top, content)]
            elif top in schema and isinstance(content, dict):
                items = [(top, k, v) for k, v in content.items()]
            else:
                line = _header_line(text, top) or _line_of(text, "", top)
                if top in schema:
                    raise InputError(f"must be a table [{top}]", file=fname, line=line, field=top)
                sections = ", ".join(s for s in schema if s)
                raise InputError(
                    f"unknown section or key (sections: {sections}; top-level keys: seed)",
                    file=fname,
                    line=line,
                    field=top,
                )
            for section, key, value in items:
                dotted = f"{section}.{key}" if section else key
                line = _line_of(text, section, key)
                if key not in schema[section]:
                    raise InputError(
                        _unknown(section, key, schema).message, file=fname, line=line, field=dotted
                    )
                try:
                    value = coerce(dotted, value, schema[section][key], from_text=False)
                except ValueError as err:
                    raise InputError(str(err), file=fname, line=line, field=dotted) from None
                section, key, dotted = _place(section, key, fname, line)
                if (section, key) in _PATH_KEYS and _relative_path(value):
                    candidate = base / value
                    if os.path.exists(candidate):  # False (never OSError) for a name too long
                        value = str(candidate)
                values[section][key] = value
                origin[dotted] = (fname, line)
    for item in overrides:
        section, key, text_value = parse_override(item)
        if section.partition(".")[0] in skip:
            continue
        dotted = f"{section}.{key}" if section else key
        if section not in schema or key not in schema[section]:
            raise InputError(_unknown(section, key, schema).message + " (in --set)", field=dotted)
        try:
            value = coerce(dotted, text_value, schema[section][key], from_text=True)
        except ValueError as err:
            raise InputError(f"{err} (in --set)", field=dotted) from None
        section, key, dotted = _place(section, key, None, None)
        values[section][key] = value
        origin[dotted] = (None, None)
    _one_kind(values["server"], origin)
    return _build(values, origin, fname)


def _one_kind(server: dict, origin: dict) -> None:
    """A `[cost]` naming a model that also gives a table key (even at its default) is one error naming that
    key where it was set (`CostKeys` refuses one off its default however the config was made)."""
    if server.get("model") is None:
        return
    for key in TABLE_KEYS:
        if f"cost.{key}" in origin:
            file, line = origin[f"cost.{key}"]
            what = "a table key, but this [cost] names a deployment (cost.model): it holds one or the other"
            raise InputError(what + (" (in --set)" if file is None else ""), file=file, line=line,
                             field=f"cost.{key}")  # fmt: skip


def locate(err: InputError, path: str | Path | None, overrides: typing.Iterable[str] = ()) -> InputError:
    """`err` about a config key (raised after loading, e.g. by a missing cost table) pointed at the config
    file and line that set the key, unless a --set override set it or the error already names a file."""
    if err.file is not None or path is None or not err.field or "." not in err.field:
        return err
    if any(parse_override(item)[:2] == tuple(err.field.split(".", 1)) for item in overrides):
        return err
    try:
        text = inputs.read_text(path, what="config", limit=inputs.LIMITS["config"])
    except InputError:
        return err
    section, _, key = err.field.partition(".")
    line = _line_of(text, section, key)
    if line is None and section == "cost" and key in COST_KEYS:  # written in the old [server] spelling
        line = _line_of(text, "server", COST_KEYS[key])
    if line is None:
        return err
    return InputError(err.message, file=str(path), line=line, field=err.field)


def _relative_path(value) -> bool:
    """A non-empty relative path: "" names no file (refused by the config), not the config's folder."""
    return isinstance(value, str) and bool(value.strip()) and not Path(value).is_absolute()


def _header_line(text: str, name: str) -> int | None:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if re.match(rf"^\s*\[\s*{re.escape(name)}\s*\]", line):
            return lineno
    return None


def _build(values: dict, origin: dict, fname: str | None) -> SimConfig:
    sections = {}
    try:
        for name, cls in _section_types().items():
            sections[name] = _construct(cls, name, values[name])
        return SimConfig(**values[""], **sections)
    except InputError as err:
        file, line = origin.get(err.field or "", (None, None))
        if err.field in origin and file is None:
            return _reraise(err.message + " (in --set)", None, None, err.field)
        return _reraise(err.message, file if err.field in origin else fname, line, err.field)


def _construct(cls: type, section: str, kwargs: dict):
    try:
        return cls(**kwargs)
    except InputError as err:
        fieldname = err.field or section
        if not fieldname.startswith((section + ".", "cost." if section == "server" else section + ".")):
            fieldname = f"{section}.{fieldname}" if fieldname != section else section
        raise InputError(err.message, field=fieldname) from None
    except (ValueError, TypeError) as err:
        # Another package's dataclass (sim.acceptance): its message names the field; keep it whole.
        match = re.search(r"\b(" + "|".join(map(re.escape, kwargs or {"-": 0})) + r")\b", str(err))
        fieldname = f"{section}.{match.group(1)}" if match else section
        raise InputError(" ".join(str(err).split()), field=fieldname) from None


def _reraise(message: str, file, line, fieldname):
    raise InputError(message, file=file, line=line, field=fieldname) from None


# -- writing -----------------------------------------------------------------------------------------------


def config_to_dict(cfg: SimConfig) -> dict:
    """{"seed": int, section: {key: value}}; tuples become lists, None stays None. The pricing fields of
    `[server]` are written as the `[cost]` section (after `server`), the keys of the kind it does not
    name left out (they are at their defaults: `sim.deploy.keys`)."""
    out: dict[str, object] = {"seed": cfg.seed}
    for name in SimConfig.SECTIONS:
        section = getattr(cfg, name)
        out[name] = {f.name: _plain(getattr(section, f.name)) for f in dataclasses.fields(section)}
        if name == "server":
            out["cost"] = _cost_section(out["server"])
    return out


def _cost_section(server: dict) -> dict:
    """Pop the pricing fields out of a dumped `[server]` into a `[cost]` dict (module docstring)."""
    other = TABLE_KEYS if server["model"] is not None else DEPLOYMENT_KEYS
    cost = {key: server.pop(fieldname) for key, fieldname in COST_KEYS.items()}
    return {key: value for key, value in cost.items() if key not in other}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def config_to_toml(cfg: SimConfig) -> str:
    """TOML text that `load_config` reads back to an equal config (None values are left out)."""
    data = config_to_dict(cfg)
    lines = [f"seed = {data['seed']}"]
    for name in (n for n in data if n != "seed"):
        lines += ["", f"[{name}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in data[name].items() if v is not None]
    return "\n".join(lines) + "\n"


def config_to_json(cfg: SimConfig) -> str:
    return dumps_json(config_to_dict(cfg), sort_keys=False)

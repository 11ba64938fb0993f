"""Mutators of the generator: from a valid seed (file bytes or a flag), the variants of each class.

Role: `special(kind)` the special-file variants of an input slot (directory, /dev/null, FIFO, missing,
empty, binary, a 3 MiB line, a symlink loop, non-UTF-8, truncated, and unreadable where not root; a
folder kind gets its own set);
`fields(seed, suffix)` the type, magnitude, unit and ordering variants of a JSON, TOML or CSV seed (a
sample of its numeric leaves, chosen deterministically); `flag_values(role)` the variants of a flag's
value. Each variant is `(class, name, content)`; `content` is bytes, or a marker string of `SPECIAL_*`
that the workspace builder (tests.fuzz.generate) makes into the real thing.

May import: the standard library, tests.fuzz.generated.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re

from tests.fuzz.generated import _at  # a copy of a JSON document with one leaf replaced

BIG = str(2**70)
#: type / magnitude class -> (name, JSON literal, TOML literal, CSV cell)
VALUES = (
    ("types", "string", '"12"', '"12"', "abc"),
    ("types", "bool", "true", "true", "true"),
    ("types", "float-for-int", "2.5", "2.5", "2.5"),
    ("types", "list", "[1]", "[1]", "[1]"),
    ("magnitudes", "zero", "0", "0", "0"),
    ("magnitudes", "negative", "-1", "-1", "-1"),
    ("magnitudes", "1e308", "1e308", "1e308", "1e308"),
    ("magnitudes", "nan", "NaN", "nan", "nan"),
    ("magnitudes", "inf", "Infinity", "inf", "inf"),
    ("magnitudes", "bigint", BIG, BIG, BIG),
)
FILE_SPECIAL = ("directory", "dev-null", "fifo", "missing", "empty", "binary", "huge-line", "symlink-loop",
                "non-utf8", "truncated")  # fmt: skip
if os.geteuid() != 0:  # root reads a mode-000 file: the variant would test nothing
    FILE_SPECIAL += ("unreadable",)
DIR_SPECIAL = ("missing", "regular-file", "empty-dir", "dev-null", "symlink-loop")
TIME = re.compile(r"(_ms|_s|seconds|^duration$|^ttfts$|^itls$|e2e|ttft|itl|tpot|arrival)", re.I)
#: (lower, higher): a variant puts the higher one's value under the lower name and back
ORDER = (("p50", "p90"), ("p90", "p99"), ("median", "p99"), ("ttft", "e2e"), ("mean", "p99"))


def special(kind: str, seed: bytes) -> list[tuple[str, str, object]]:
    if kind.endswith("-dir"):
        return [("special", name, "SPECIAL_" + name) for name in DIR_SPECIAL]
    out: list[tuple[str, str, object]] = []
    for name in FILE_SPECIAL:
        content: object = {
            "empty": b"",
            "binary": bytes(range(256)) * 8,
            "huge-line": seed.split(b"\n")[0] + b"," + b"7" * (3 << 20) + b"\n",
            "non-utf8": seed[: len(seed) // 2] + b"\xff\xfe\xc3(" + seed[len(seed) // 2 :],
            "truncated": seed[: max(1, len(seed) // 3)],
        }.get(name, "SPECIAL_" + name)
        out.append(("special", name, content))
    return out


def _pick(items: list, n: int = 3) -> list:
    """A deterministic spread of at most n items: first, middle, last."""
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


# -- JSON ---------------------------------------------------------------------------------------------


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield from _leaves(v, (*path, i))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path, doc


def _json_fields(seed: bytes) -> list[tuple[str, str, bytes]]:
    doc = json.loads(seed)
    leaves = list(_leaves(doc))
    out = []
    for path, _ in _pick(leaves):
        at = ".".join(map(str, path))
        raw = json.dumps(_at(doc, path, "@@")).encode()
        out += [(cls, f"{at}={name}", raw.replace(b'"@@"', lit.encode())) for cls, name, lit, _, _ in VALUES]
    for scale, tag in ((1000.0, "x1000"), (0.001, "/1000")):
        timed = doc
        for path, v in leaves:
            if any(isinstance(p, str) and TIME.search(p) for p in path):
                timed = _at(timed, path, v * scale)
        if timed is not doc:
            out.append(("units", f"time {tag}", json.dumps(timed).encode()))
    for lo, hi in ORDER:
        los = [(p, v) for p, v in leaves if lo in ".".join(map(str, p))]
        for p, v in los[:1]:
            mate = [
                (q, w) for q, w in leaves if ".".join(map(str, q)) == ".".join(map(str, p)).replace(lo, hi)
            ]
            if mate:
                swapped = _at(_at(doc, p, mate[0][1] * 10 + 1), mate[0][0], v)
                out.append(("orderings", f"{lo}>{hi}", json.dumps(swapped).encode()))
    return out


# -- TOML ---------------------------------------------------------------------------------------------

_NUM_LINE = re.compile(rb'^(\s*[\w".-]+\s*=\s*)(-?\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)(\s*(?:#.*)?)$')


def _toml_fields(seed: bytes) -> list[tuple[str, str, bytes]]:
    lines = seed.split(b"\n")
    hits = [i for i, ln in enumerate(lines) if _NUM_LINE.match(ln)]
    out = []
    for i in _pick(hits):
        m = _NUM_LINE.match(lines[i])
        key = m.group(1).split(b"=")[0].strip().strip(b'"').decode()
        for cls, name, _, lit, _ in VALUES:
            edited = [*lines[:i], m.group(1) + lit.encode() + m.group(3), *lines[i + 1 :]]
            out.append((cls, f"{key}={name}", b"\n".join(edited)))
    for i in hits:
        m = _NUM_LINE.match(lines[i])
        key = m.group(1).split(b"=")[0].strip().strip(b'"').decode()
        if TIME.search(key) or key in ("rate",):
            for scale, tag in ((1000, "x1000"), (0.001, "/1000")):
                value = float(m.group(2).replace(b"_", b"")) * scale
                edited = [*lines[:i], m.group(1) + repr(value).encode() + m.group(3), *lines[i + 1 :]]
                out.append(("units", f"{key} {tag}", b"\n".join(edited)))
            break
    return out


# -- CSV ----------------------------------------------------------------------------------------------


def _csv_fields(seed: bytes) -> list[tuple[str, str, bytes]]:
    rows = list(csv.reader(io.StringIO(seed.decode())))
    if len(rows) < 2:
        return []
    head, first = rows[0], rows[1]

    def numeric(cell: str) -> bool:
        try:
            float(cell)
        except ValueError:
            return False
        return True

    cols = [j for j, cell in enumerate(first) if numeric(cell)]

    def render(table) -> bytes:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(table)
        return buf.getvalue().encode()

    out = []
    for j in _pick(cols):
        for cls, name, _, _, cell in VALUES:
            table = [list(r) for r in rows]
            table[1][j] = cell
            out.append((cls, f"{head[j]}={name}", render(table)))
    timed = [j for j in cols if TIME.search(head[j])]
    for scale, tag in ((1000.0, "x1000"), (0.001, "/1000")):
        if timed:
            table = [list(r) for r in rows]
            for r in table[1:]:
                for j in timed:
                    if j < len(r) and numeric(r[j]):
                        r[j] = repr(float(r[j]) * scale)
            out.append(("units", f"time {tag}", render(table)))
    for lo, hi in ORDER:
        for j, name in enumerate(head):
            k = head.index(name.replace(lo, hi)) if lo in name and name.replace(lo, hi) in head else None
            if k is not None and j in cols:
                table = [list(r) for r in rows]
                table[1][j], table[1][k] = repr(float(rows[1][k]) * 10 + 1), rows[1][j]
                out.append(("orderings", f"{name}>{head[k]}", render(table)))
                break
    return out


def fields(seed: bytes, suffix: str) -> list[tuple[str, str, bytes]]:
    """Type, magnitude, unit and ordering variants of a seed file by its suffix (none for other kinds)."""
    if suffix == ".json":
        return _json_fields(seed)
    if suffix == ".toml":
        return _toml_fields(seed)
    if suffix == ".csv":
        return _csv_fields(seed)
    return []


#: role -> values of a flag's variants
FLAG_VALUES = {
    "number": ("0", "-1", "1e308", "nan", "inf", "1" * 40, "abc", "2.5", "true", "[1]"),
    "name": ("", "no-such-name", "n" * 300),
    "text": ("", "garbage", "nan", "t" * 300),
    "set": (
        "seed=abc",
        "seed=1e308",
        "seed=nan",
        "seed=-1",
        "seed=2.5",
        "seed=true",
        "seed=[1]",
        "x",
        "workload.num_requests=0",
    ),  # fmt: skip
    "model-ref": ("json:dumps", "os:getcwd", "no_such_module:x", "tests.analysis.fake_model:nothing"),
    "choice": ("nope",),
}


def flag_values(role: str) -> tuple[str, ...]:
    return FLAG_VALUES.get(role, ())

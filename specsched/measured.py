"""Measured step times in: readers for three formats, row selection, and specbed's own step-CSV writer.

Role: turn a user's measurements into points the cost fit (`specsched.fit`) and `specbed cost check` use.
Every point is one measured engine step: its phase, tensor-parallel degree, running requests, query tokens,
KV tokens read, and seconds. Formats, detected by a JSON file's keys or a CSV's header:

- Splitwise's perf-model CSV (`model,hardware,prompt_size,batch_size,token_size,...,prompt_time,
  token_time,e2e_time,tensor_parallel`, times in ms). One row gives two points: a decode step of
  `batch_size` requests, one token each, at a mean context of `prompt_size + token_size/2` per request
  (`token_time`), and a prefill step of `batch_size·prompt_size` prompt tokens (`prompt_time`).
- specbed's measured-step CSV (`phase,tp,requests,tokens,context_tokens,seconds`; phase is decode,
  prefill or draft; `tp` and `context_tokens` may be left out: 1 and 0). `write_steps` writes it.
- vLLM's dynamic speculative-decoding profile JSON: `batch_stats` maps batch size → {k → median
  inter-token latency in ms}; a step of `bs` requests verifying k drafts each has `bs·(1+k)` tokens. The
  file may add `tp` (default 1) and `context_tokens` (per request, default 0).

Bad input raises `InputError` naming the file, line (or JSON key) and field.

May import: numpy, the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specsched.io import inputs, safeio
from specsched.io.errors import InputError

PHASES: tuple[str, ...] = ("decode", "prefill", "draft")
STEP_COLUMNS: tuple[str, ...] = ("phase", "tp", "requests", "tokens", "context_tokens", "seconds")
SPLITWISE_COLUMNS: tuple[str, ...] = (
    "prompt_size",
    "batch_size",
    "token_size",
    "prompt_time",
    "token_time",
    "tensor_parallel",
)


@dataclass(frozen=True)
class Points:
    """Measured steps, one entry per point (arrays of equal length n).

    phase: str[n] (decode|prefill|draft); tp, requests, tokens: int64[n]; context: float64[n], KV tokens
    read in the step (summed over requests); seconds: float64[n]; source: str[n], "FILE:LINE" of the row.
    """

    phase: np.ndarray
    tp: np.ndarray
    requests: np.ndarray
    tokens: np.ndarray
    context: np.ndarray
    seconds: np.ndarray
    source: np.ndarray

    def __len__(self) -> int:
        return int(self.seconds.size)

    def take(self, mask) -> Points:
        """The points where the boolean (or index) `mask` selects."""
        return Points(*(getattr(self, f)[mask] for f in _FIELDS))


_FIELDS = ("phase", "tp", "requests", "tokens", "context", "seconds", "source")


#: upper bounds of measured columns (seconds; token_time / prompt_time in ms); counts beyond _MAX_COUNT
_MAX = {"seconds": 1e4, "token_time": 1e7, "prompt_time": 1e7, "context_tokens": 1e12}
_MIN = {"seconds": 1e-9, "token_time": 1e-6, "prompt_time": 1e-6}
_MAX_COUNT = float(1 << 40)


def _number(cells: dict, key: str, file: str, line: int, *, whole: bool = False, positive: bool = False):
    raw = cells.get(key)
    hi = _MAX.get(key, _MAX_COUNT)  # a 40-digit count or a 1e39 s step is a unit error, not a GPU
    val = inputs.number(raw, file=file, line=line, field=key, hi=hi)  # finite; null / list / digits refused
    if key in ("seconds", "token_time", "prompt_time") and val < _MIN.get(key, 0.0):
        raise InputError(f"a step time must be ≥ {_MIN[key]:g}, got {raw!r}", file=file, line=line, field=key)
    if not math.isfinite(val) or val < 0 or (positive and val <= 0):
        need = "> 0" if positive else "≥ 0"
        raise InputError(f"must be a finite number {need}, got {raw!r}", file=file, line=line, field=key)
    if whole and not val.is_integer():
        raise InputError(f"must be a whole number, got {raw!r}", file=file, line=line, field=key)
    return int(val) if whole else val


def _splitwise_points(cells: dict, file: str, line: int) -> list[dict]:
    prompt = _number(cells, "prompt_size", file, line, whole=True, positive=True)
    batch = _number(cells, "batch_size", file, line, whole=True, positive=True)
    gen = _number(cells, "token_size", file, line, whole=True)
    tp = _number(cells, "tensor_parallel", file, line, whole=True, positive=True)
    decode_s = _number(cells, "token_time", file, line, positive=True) / 1e3
    prefill_s = _number(cells, "prompt_time", file, line, positive=True) / 1e3
    common = {"tp": tp, "requests": batch}
    return [
        dict(common, phase="decode", tokens=batch, context=batch * (prompt + gen / 2), seconds=decode_s),
        dict(common, phase="prefill", tokens=batch * prompt, context=batch * prompt, seconds=prefill_s),
    ]


def _step_points(cells: dict, file: str, line: int) -> list[dict]:
    phase = (cells.get("phase") or "").strip().lower()
    if phase not in PHASES:
        raise InputError(
            f"must be one of {', '.join(PHASES)}, got {cells.get('phase')!r}",
            file=file,
            line=line,
            field="phase",
        )
    tp = _number(cells, "tp", file, line, whole=True, positive=True) if "tp" in cells else 1
    ctx = _number(cells, "context_tokens", file, line) if "context_tokens" in cells else 0.0
    requests = _number(cells, "requests", file, line, whole=True, positive=True)
    tokens = _number(cells, "tokens", file, line, whole=True, positive=True)
    seconds = _number(cells, "seconds", file, line, positive=True)
    return [dict(phase=phase, tp=tp, requests=requests, tokens=tokens, context=ctx, seconds=seconds)]


def _read_csv(path: Path, text: str) -> list[tuple[dict, list[dict], int]]:
    file = str(path)
    rows = [
        (i, line)
        for i, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not rows:
        raise InputError("empty measured-data file (no header)", file=file)
    header_line, header = rows[0]
    names = [h.strip() for h in next(csv.reader([header]))]
    inputs.unique_columns(names, file, header_line)
    if all(c in names for c in SPLITWISE_COLUMNS):
        convert = _splitwise_points
    elif all(c in names for c in ("phase", "requests", "tokens", "seconds")):
        convert = _step_points
    else:
        raise InputError(
            "unknown measured-data header: expected Splitwise's perf-model columns "
            f"({','.join(SPLITWISE_COLUMNS)}) or specbed's ({','.join(STEP_COLUMNS)}), "
            f"got {','.join(names)!r}",
            file=file,
            line=header_line,
        )
    out = []
    for lineno, line in rows[1:]:
        values = next(csv.reader([line]))
        if len(values) != len(names):
            raise InputError(f"expected {len(names)} columns, got {len(values)}", file=file, line=lineno)
        cells = {n: v.strip() for n, v in zip(names, values)}
        out.append((cells, convert(cells, file, lineno), lineno))
    if not out:
        raise InputError("measured-data file has a header but no rows", file=file)
    return out


def _read_vllm(path: Path, text: str) -> list[tuple[dict, list[dict], int]]:
    file = str(path)
    doc = inputs.parse_json(text, file)
    if not isinstance(doc, dict) or not isinstance(doc.get("batch_stats"), dict) or not doc["batch_stats"]:
        raise InputError(
            "expected a JSON object with a non-empty 'batch_stats' map", file=file, field="batch_stats"
        )
    tp = _number(doc, "tp", file, None, whole=True, positive=True) if "tp" in doc else 1
    ctx = _number(doc, "context_tokens", file, None) if "context_tokens" in doc else 0.0
    out = []
    for bs_key, per_k in doc["batch_stats"].items():
        where = f"batch_stats.{bs_key}"
        bs = _number({where: bs_key}, where, file, None, whole=True, positive=True)
        if not isinstance(per_k, dict) or not per_k:
            raise InputError("expected a map k → milliseconds", file=file, field=where)
        for k_key, ms in per_k.items():
            key = f"{where}.{k_key}"
            k = _number({key: k_key}, key, file, None, whole=True)
            sec = _number({key: ms}, key, file, None, positive=True) / 1e3
            cells = {"batch_size": str(bs), "k": str(k), "tp": str(tp)}
            point = dict(
                phase="decode", tp=tp, requests=bs, tokens=bs * (1 + k), context=bs * ctx, seconds=sec
            )
            out.append((cells, [point], 0))
    return out


def _parse_where(where: Iterable[str]) -> list[tuple[str, str]]:
    out = []
    for item in where:
        col, sep, val = item.partition("=")
        if not sep or not col.strip():
            raise InputError(f"--where needs COLUMN=VALUE, got {item!r}", field="--where")
        out.append((col.strip(), val.strip()))
    return out


def _matches(value: object, want: str) -> bool:
    if str(value) == want:
        return True
    try:
        return float(value) == float(want)  # tp=4 matches "4" and 4.0
    except (TypeError, ValueError):
        return False


def read_measured(paths: Sequence[str | Path], where: Iterable[str] = ()) -> Points:
    """All points of the measured files `paths`, keeping the rows where every `--where COLUMN=VALUE` holds.

    A COLUMN is a column of the file (e.g. `hardware`, `tensor_parallel`) or a point field (`phase`, `tp`,
    `requests`, `tokens`). Raises `InputError` for unreadable files, unknown formats, bad rows, a
    COLUMN no file has, or an empty selection.
    """
    conditions = _parse_where(where)
    known: set[str] = set()
    points: list[dict] = []
    for path in map(Path, paths):
        text = inputs.read_text(path, what="measured-data file", limit=inputs.LIMITS["table"])
        reader = _read_vllm if path.suffix.lower() == ".json" else _read_csv
        with inputs.reading(path):
            rows = reader(path, text)
        for cells, derived, lineno in rows:
            for point in derived:
                fields = {**cells, **{k: v for k, v in point.items() if k != "context"}}
                known.update(fields)
                if all(col in fields and _matches(fields[col], val) for col, val in conditions):
                    points.append(dict(point, source=f"{path}:{lineno}" if lineno else str(path)))
    for col, _ in conditions:
        if col not in known:
            raise InputError(f"no measured file has a column {col!r}", field="--where")
    if not points:
        raise InputError("no measured rows left after --where " + " ".join(f"{c}={v}" for c, v in conditions))
    return Points(
        phase=np.array([p["phase"] for p in points]),
        tp=np.array([p["tp"] for p in points], dtype=np.int64),
        requests=np.array([p["requests"] for p in points], dtype=np.int64),
        tokens=np.array([p["tokens"] for p in points], dtype=np.int64),
        context=np.array([p["context"] for p in points], dtype=np.float64),
        seconds=np.array([p["seconds"] for p in points], dtype=np.float64),
        source=np.array([p["source"] for p in points]),
    )


def write_steps(path: str | Path, rows: Iterable[dict]) -> None:
    """Write specbed's measured-step CSV: one row per dict with the keys of STEP_COLUMNS."""
    lines = [",".join(STEP_COLUMNS)]
    for row in rows:
        phase = str(row["phase"])
        if phase not in PHASES:
            raise ValueError(f"write_steps: phase must be one of {PHASES}, got {phase!r}")
        lines.append(
            f"{phase},{int(row['tp'])},{int(row['requests'])},{int(row['tokens'])},"
            f"{float(row['context_tokens']):g},{float(row['seconds'])!r}"
        )
    safeio.write_text(path, "\n".join(lines) + "\n")  # atomic: a full disk keeps the old file

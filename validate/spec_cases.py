"""The measured speculative dataset: one CSV per split (validate/data/spec_train.csv, spec_check.csv), read
strictly into `SpecCase`s.

Role: `read_cases(path)` reads a file in the dataset format (docs/notes/.. TEAM format: `COLUMNS`) through
`specsched.io.inputs` (a regular file, capped, UTF-8) and checks every row: a bad cell is one `InputError`
naming the file, the row's line and the field (the CLI prints it as one line and exits 2). Nothing here
prices a case (`validate.spec_replay` does).

May import: the standard library, `specsched.io.inputs`, `specsched.io.errors`, `specsched.price.models`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.price import PRECISIONS, get_gpu

COLUMNS = (
    "case_id", "source", "citation", "split", "engine", "engine_version", "gpu", "tp", "model", "precision",
    "drafter", "drafter_model", "shape", "k", "tree_nodes", "workload", "batch", "request_rate",
    "temperature", "metric", "measured", "baseline", "acceptance_length", "acceptance_rates", "quote",
)  # fmt: skip
SPLITS = ("train", "check")
ENGINES = ("vllm", "sglang", "trtllm")
DRAFTERS = ("eagle", "eagle3", "draft_model", "ngram", "mtp", "medusa")
SHAPES = ("chain", "tree")
METRICS = ("speedup", "tpot_ms", "throughput_tok_s", "itl_ms", "e2e_s")
#: values of the optional column `attention_backend`: the attention backend the case's SGLang server ran
#: (blank or absent: the version's default, `specsched.spec_versions`); it picks the verify kernel
#: (`validate.spec_replay.step_parts`)
BACKENDS = ("fa3", "flashinfer")


@dataclass(frozen=True)
class SpecCase:
    """One measured speculative case (columns of the dataset format; numbers parsed, blanks None)."""

    case_id: str
    source: str
    split: str
    engine: str
    engine_version: str
    gpu: str
    tp: int
    model: str
    precision: str | None
    drafter: str
    drafter_model: str
    shape: str
    k: int
    tree_nodes: int | None
    workload: str
    batch: int | None
    request_rate: float | None
    metric: str
    measured: float
    baseline: float | None
    acceptance_length: float | None
    acceptance_rates: tuple[float, ...] | None
    line: int = 0
    file: str = ""
    temperature: float | None = None  # blank: not stated (priced with the checkpoint's default sampling)
    attention_backend: str | None = None  # SGLang's --attention-backend where stated (None: the default)

    @property
    def emitted(self) -> float:
        """Mean tokens a request emits a target step (bonus included): the published acceptance length,
        else 1 + Σ_i Π_{j ≤ i} rate_j from the per-position conditional rates."""
        if self.acceptance_length is not None:
            return self.acceptance_length
        out, surv = 1.0, 1.0
        for r in self.acceptance_rates or ():
            surv *= r
            out += surv
        return out


def _choice(row: dict, key: str, allowed: tuple, where: dict) -> str:
    value = row[key].strip().lower()
    if value not in allowed:
        raise InputError(f"must be one of {', '.join(allowed)}; got {row[key][:40]!r}", field=key, **where)
    return value


def _num(row: dict, key: str, where: dict, *, integer=False, lo=None, hi=None, blank=False):
    text = row[key].strip()
    if not text:
        if blank:
            return None
        raise InputError("is blank", field=key, **where)
    return inputs.number(text, field=key, integer=integer, lo=lo, hi=hi, **where)


def _rates(row: dict, where: dict) -> tuple[float, ...] | None:
    text = row["acceptance_rates"].strip()
    if not text:
        return None
    parts = text.split(";")
    if len(parts) > 64:
        raise InputError(f"{len(parts)} rates (at most 64)", field="acceptance_rates", **where)
    return tuple(inputs.number(p, field="acceptance_rates", lo=0.0, hi=1.0, **where) for p in parts)


def _gpu_key(name: str) -> str:
    """The catalogue's key of GPU `name`, or `name` lower-cased when the catalogue lacks it."""
    try:
        return get_gpu(name).key
    except InputError:
        return name.lower()


def parse_row(row: dict, file: str, line: int) -> SpecCase:
    """The `SpecCase` of one CSV row (InputError naming file, line and field)."""
    where = {"file": file, "line": line}
    for key in COLUMNS:
        if row.get(key) is None:
            raise InputError("missing (a short row)", field=key, **where)
    if not row["case_id"].strip() or not row["source"].strip():
        raise InputError("is blank", field="case_id" if not row["case_id"].strip() else "source", **where)
    for key in ("gpu", "model", "engine_version"):
        if not row[key].strip():
            raise InputError("is blank", field=key, **where)
    # a GPU or model the catalogue lacks is legal data: the replay reports the case as not modelled
    gpu = _gpu_key(row["gpu"].strip())
    precision = row["precision"].strip().lower() or None
    if precision is not None and precision not in PRECISIONS:
        raise InputError(f"must be one of {', '.join(PRECISIONS)} or blank; got {row['precision'][:20]!r}",
                         field="precision", **where)  # fmt: skip
    shape = _choice(row, "shape", SHAPES, where)
    k = _num(row, "k", where, integer=True, lo=1, hi=64)
    nodes = _num(row, "tree_nodes", where, integer=True, lo=1, hi=4096, blank=True)
    if (shape == "tree") != (nodes is not None):
        raise InputError("set for trees only (blank for chains)", field="tree_nodes", **where)
    batch = _num(row, "batch", where, integer=True, lo=1, hi=1 << 20, blank=True)
    rate = _num(row, "request_rate", where, lo=0.0, hi=1e9, blank=True)
    if batch is None and rate is None:
        raise InputError("batch or request_rate is needed", field="batch", **where)
    accept = _num(row, "acceptance_length", where, lo=1.0, hi=1.0 + (nodes or k), blank=True)
    rates = _rates(row, where)
    if rates is not None and len(rates) > (nodes or k):
        raise InputError(f"{len(rates)} rates for k = {k}", field="acceptance_rates", **where)
    temperature = _num(row, "temperature", where, lo=0.0, hi=10.0, blank=True)
    backend = _backend(row, where)
    return SpecCase(
        row["case_id"].strip(), row["source"].strip(), _choice(row, "split", SPLITS, where),
        _choice(row, "engine", ENGINES, where), row["engine_version"].strip(), gpu,
        _num(row, "tp", where, integer=True, lo=1, hi=1024), row["model"].strip(),
        precision, _choice(row, "drafter", DRAFTERS, where),
        row["drafter_model"].strip(), shape, k, nodes, row["workload"].strip(), batch, rate,
        _choice(row, "metric", METRICS, where), _num(row, "measured", where, lo=0.0, hi=1e12),
        _num(row, "baseline", where, lo=0.0, hi=1e12, blank=True),
        accept, rates, line, file, temperature, backend,
    )  # fmt: skip


def _backend(row: dict, where: dict) -> str | None:
    """The optional `attention_backend` cell: blank / absent → None; SGLang rows only."""
    raw = (row.get("attention_backend") or "").strip().lower()
    if not raw:
        return None
    if raw not in BACKENDS:
        raise InputError(f"must be one of {', '.join(BACKENDS)} or blank; got {raw[:20]!r}",
                         field="attention_backend", **where)  # fmt: skip
    if row["engine"].strip() != "sglang":
        raise InputError("is read for SGLang rows only (blank for other engines)", field="attention_backend",
                         **where)  # fmt: skip
    return raw


def read_cases(path) -> list[SpecCase]:
    """Every case of one dataset file (InputError naming file, line and field on the first bad cell)."""
    file = str(path)
    text = inputs.read_text(path, what="speculative dataset", limit=inputs.LIMITS["table"])
    with inputs.reading(file):
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = reader.fieldnames or []
        inputs.unique_columns(header, file, 1)
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise InputError(f"the header lacks column {missing[0]!r}", file=file, line=1, field=missing[0])
        cases, seen = [], set()
        for row in reader:
            line = reader.line_num
            if None in row:
                raise InputError("more cells than header columns", file=file, line=line)
            case = parse_row(row, file, line)
            if case.case_id in seen:
                raise InputError(
                    f"case_id {case.case_id!r} appears twice", file=file, line=line, field="case_id"
                )
            seen.add(case.case_id)
            cases.append(case)
    if not cases:
        raise InputError("no cases (a header and at least one row are needed)", file=file)
    return cases

"""vLLM's speculative-decoding acceptance counters, read from what its users already have.

Role: turn vLLM's own numbers into per-position counts `Acceptance` (and from there the conditional
curve a curves file holds). Three inputs, recognised by content (`read_acceptance`):

- Prometheus text from vLLM's `/metrics`: counters `vllm:spec_decode_num_drafts_total` and
  `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}` (also read, not required:
  `..._num_draft_tokens_total`, `..._num_accepted_tokens_total`). Other labels (`engine`, `model_name`, ...)
  are summed over; one model per file. One file is cumulative since start; two files are a before/after
  pair and the difference is used: a counter lower in the second file (a restart between the scrapes, or
  the files in the wrong order) is refused.
- vLLM log lines `SpecDecoding metrics: ... Accepted: N tokens, Drafted: N tokens, Per-position acceptance
  rate: x, y, ...` (fields found by key: their order and set differ between vLLM versions; CRLF is fine).
  Each interval's drafts are its drafted tokens / K (K = positions); intervals are pooled weighted by
  their drafts; intervals with no drafted tokens are skipped.
- `vllm bench serve --save-result` JSON: `spec_decode_num_drafts` and
  `spec_decode_per_position_acceptance_rates`. Several files are pooled weighted by their drafts.

vLLM's position i counts drafts with at least i + 1 tokens accepted, so its per-position rates a_i / D
are unconditional and non-increasing, τ = 1 + Σ_i a_i / D, and the conditional curve is
c_1 = a_0 / D, c_i = a_{i−1} / a_{i−2}. Zero drafts, a rate above the previous position's, or a missing
position raise `InputError` naming the file (line) and field.

May import: numpy, the standard library, `specsched.errors`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specsched import inputs
from specsched.errors import InputError

PROM_PREFIX = "vllm:spec_decode_"
PROM_DRAFTS = "vllm:spec_decode_num_drafts_total"
PROM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
PROM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
PROM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
LOG_MARK = "SpecDecoding metrics:"
LOG_RATES = "Per-position acceptance rate"
BENCH_DRAFTS = "spec_decode_num_drafts"
BENCH_RATES = "spec_decode_per_position_acceptance_rates"


@dataclass(frozen=True)
class Acceptance:
    """Pooled acceptance counts: `drafts` D (float: log intervals give drafted tokens / K) and
    `per_pos: float64[K]`, a_i = drafts with at least i + 1 tokens accepted. `sources`: the files read."""

    drafts: float
    per_pos: np.ndarray
    sources: tuple[str, ...] = ()
    kind: str = ""

    @property
    def rates(self) -> np.ndarray:
        """float64[K]: vLLM's (unconditional) per-position acceptance rates a_i / D."""
        return self.per_pos / self.drafts

    @property
    def tau(self) -> float:
        """Mean acceptance length with every position verified: 1 + Σ a_i / D."""
        return float(1.0 + self.rates.sum())

    def conditional(self) -> np.ndarray:
        """float64[K]: c_1 = a_0 / D, c_i = a_{i−1} / a_{i−2} (0 where nothing reached position i − 1)."""
        prev = np.concatenate([[self.drafts], self.per_pos[:-1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            c = np.where(prev > 0, self.per_pos / np.where(prev > 0, prev, 1.0), 0.0)
        return np.clip(c, 0.0, 1.0)


def _check(
    drafts: float, per_pos: np.ndarray, file: str, line: int | None, drafts_field: str, pos_field
) -> None:
    """Zero drafts, a count above the previous position's (or above D): InputError naming the field."""
    if not drafts > 0:
        raise InputError(
            f"zero drafts ({drafts:g}): no speculation was measured", file=file, line=line, field=drafts_field
        )
    prev = drafts
    for i, a in enumerate(per_pos):
        if a < 0 or a > prev * (1 + 1e-9) + 1e-9:
            what = "the number of drafts" if i == 0 else f"position {i - 1}'s"
            raise InputError(
                f"rate {a / drafts:.4g} is above {what} ({prev / drafts:.4g}): vLLM's per-position "
                "rates never increase",
                file=file,
                line=line,
                field=pos_field(i),
            )
        prev = a


# -- Prometheus ------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def _labels(text: str, file: str, line: int) -> tuple[tuple[str, str], ...]:
    out, pos = [], 0
    while pos < len(text.strip()):
        m = _LABEL.match(text, pos)
        if m is None:
            raise InputError(f"cannot parse labels {{{text}}}", file=file, line=line, field="labels")
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    return tuple(sorted(out))


def _prom_series(text: str, file: str) -> dict[tuple[str, tuple], tuple[float, int]]:
    """{(metric, labels): (value, line)} for the vllm:spec_decode_* counters of one scrape."""
    series = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.startswith(PROM_PREFIX):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            raise InputError("cannot parse the sample line", file=file, line=lineno, field=line.split("{")[0])
        name = m.group(1)
        if name.endswith("_created"):
            continue
        if not name.endswith("_total"):  # exporters that drop the counter suffix
            name += "_total"
        try:
            value = float(m.group(3))
        except ValueError:
            raise InputError(f"not a number: {m.group(3)!r}", file=file, line=lineno, field=name) from None
        if not math.isfinite(value) or value < 0:
            raise InputError(
                f"counter value {value!r} is not a finite number >= 0", file=file, line=lineno, field=name
            )
        series[(name, _labels(m.group(2) or "", file, lineno))] = (value, lineno)
    return series


def _prom_counts(series: dict, file: str) -> Acceptance:
    """Sum the counters over every label but `position`; check one model and positions 0..K−1."""
    models = {v for (_, labels) in series for k, v in labels if k == "model_name"}
    if len(models) > 1:
        raise InputError(
            f"counters of several models ({', '.join(sorted(models))}): scrape one model per file",
            file=file,
            field="model_name",
        )
    drafts, pos = 0.0, {}
    seen_drafts = False
    for (name, labels), (value, lineno) in series.items():
        if name == PROM_DRAFTS:
            drafts += value
            seen_drafts = True
        elif name == PROM_PER_POS:
            p = dict(labels).get("position")
            if p is None or not p.isdigit():
                raise InputError(
                    f"position label {p!r} is not an integer >= 0",
                    file=file,
                    line=lineno,
                    field=f"{PROM_PER_POS}{{position}}",
                )
            pos[int(p)] = pos.get(int(p), 0.0) + value
    if not seen_drafts:
        raise InputError("missing counter (is speculative decoding on?)", file=file, field=PROM_DRAFTS)
    if not pos:
        raise InputError("missing counter", file=file, field=PROM_PER_POS)
    k = max(pos) + 1
    for i in range(k):
        if i not in pos:
            raise InputError(
                f"missing position {i} (positions 0..{k - 1} expected)",
                file=file,
                field=f'{PROM_PER_POS}{{position="{i}"}}',
            )
    per_pos = np.array([pos[i] for i in range(k)], dtype=np.float64)
    _check(drafts, per_pos, file, None, PROM_DRAFTS, lambda i: f'{PROM_PER_POS}{{position="{i}"}}')
    return Acceptance(drafts, per_pos, (file,), "prometheus")


def _series_name(name: str, labels: tuple) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def read_prometheus(paths: list[str], texts: list[str]) -> Acceptance:
    """One cumulative scrape, or a before/after pair (the difference of every counter)."""
    if len(paths) > 2:
        raise InputError(
            f"{len(paths)} Prometheus scrapes: give one (cumulative) or two (before, after)",
            file=paths[2],
            field="FILE",
        )
    scrapes = [_prom_series(t, p) for p, t in zip(paths, texts)]
    if len(scrapes) == 1:
        return _prom_counts(scrapes[0], paths[0])
    before, after = scrapes
    diff = {}
    for key, (value, lineno) in after.items():
        old = before.get(key, (0.0, None))[0]
        if value < old:
            raise InputError(
                f"counter fell from {old:g} to {value:g} between {paths[0]} and this scrape "
                "(a restart between the scrapes, or the files in the wrong order)",
                file=paths[1],
                line=lineno,
                field=_series_name(*key),
            )
        diff[key] = (value - old, lineno)
    for key, (_value, lineno) in before.items():
        if key not in after:
            raise InputError(
                "counter present before but missing after (a restart between the scrapes?)",
                file=paths[0],
                line=lineno,
                field=_series_name(*key),
            )
    acc = _prom_counts(diff, paths[1])
    return Acceptance(acc.drafts, acc.per_pos, tuple(paths), "prometheus pair")


# -- logs ------------------------------------------------------------------------------------------------

_KEY = re.compile(r"(?:^|,)\s*([A-Za-z][A-Za-z \-]*?):\s*")


def _log_fields(text: str) -> dict[str, str]:
    """'Key: value, Key: v1, v2, ...' → {key: value text}: a key starts after a comma, values never do."""
    marks = list(_KEY.finditer(text))
    return {
        m.group(1).strip(): text[m.end() : marks[j + 1].start() if j + 1 < len(marks) else len(text)].strip()
        for j, m in enumerate(marks)
    }


def _log_number(fields: dict, key: str, file: str, line: int) -> float:
    if key not in fields:
        raise InputError("missing field", file=file, line=line, field=key)
    text = fields[key].split()[0] if fields[key] else ""
    try:
        return float(text.rstrip("%"))
    except ValueError:
        raise InputError(f"not a number: {fields[key]!r}", file=file, line=line, field=key) from None


def read_logs(paths: list[str], texts: list[str]) -> Acceptance:
    """Pool every `SpecDecoding metrics` line of the logs, each interval weighted by its drafts."""
    drafts, per_pos, k_first = 0.0, None, None
    for file, text in zip(paths, texts):
        for lineno, raw in enumerate(text.splitlines(), start=1):
            at = raw.find(LOG_MARK)
            if at < 0:
                continue
            fields = _log_fields(raw[at + len(LOG_MARK) :].strip())
            drafted = _log_number(fields, "Drafted", file, lineno)
            if drafted <= 0:
                continue  # an idle interval: nothing drafted, rates are nan
            if LOG_RATES not in fields:
                raise InputError(
                    "missing field (vLLM before 0.9 does not log it)", file=file, line=lineno, field=LOG_RATES
                )
            try:
                rates = np.array([float(x) for x in fields[LOG_RATES].split(",")], dtype=np.float64)
            except ValueError:
                raise InputError(
                    f"not a list of numbers: {fields[LOG_RATES]!r}", file=file, line=lineno, field=LOG_RATES
                ) from None
            if k_first is None:
                k_first = (rates.size, file, lineno)
            elif rates.size != k_first[0]:
                i = min(rates.size, k_first[0])
                raise InputError(
                    f"has {rates.size} positions but {k_first[1]}:{k_first[2]} has {k_first[0]}: "
                    f"missing position {i}",
                    file=file,
                    line=lineno,
                    field=f"{LOG_RATES}[{i}]",
                )
            d = drafted / rates.size
            _check(d, rates * d, file, lineno, "Drafted", lambda i: f"{LOG_RATES}[{i}]")
            drafts += d
            per_pos = rates * d if per_pos is None else per_pos + rates * d
    if per_pos is None:
        raise InputError(
            f"no '{LOG_MARK}' line with drafted tokens: zero drafts", file=paths[0], field="Drafted"
        )
    return Acceptance(drafts, per_pos, tuple(paths), "log")


# -- vllm bench serve JSON -------------------------------------------------------------------------------


def read_bench(paths: list[str], docs: list) -> Acceptance:
    """Pool `vllm bench serve --save-result` files weighted by their drafts."""
    drafts, per_pos, k = 0.0, None, None
    for file, doc in zip(paths, docs):
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", file=file)
        d = doc.get(BENCH_DRAFTS)
        if d is None:
            raise InputError("missing (was speculative decoding on?)", file=file, field=BENCH_DRAFTS)
        if isinstance(d, bool) or not isinstance(d, int | float) or not math.isfinite(d) or d < 0:
            raise InputError(f"expected a number >= 0, got {d!r}", file=file, field=BENCH_DRAFTS)
        rates = doc.get(BENCH_RATES)
        if not isinstance(rates, list) or not rates:
            raise InputError("missing or not a non-empty list", file=file, field=BENCH_RATES)
        for i, x in enumerate(rates):
            if (
                isinstance(x, bool)
                or not isinstance(x, int | float)
                or not math.isfinite(x)
                or not 0 <= x <= 1
            ):
                what = "missing position" if x is None else f"expected a rate in [0, 1], got {x!r}"
                raise InputError(what, file=file, field=f"{BENCH_RATES}[{i}]")
        if k is not None and len(rates) != k[0]:
            raise InputError(
                f"has {len(rates)} positions but {k[1]} has {k[0]}", file=file, field=BENCH_RATES
            )
        k = k or (len(rates), file)
        counts = np.asarray(rates, dtype=np.float64) * d
        _check(float(d), counts, file, None, BENCH_DRAFTS, lambda i: f"{BENCH_RATES}[{i}]")
        drafts += d
        per_pos = counts if per_pos is None else per_pos + counts
    return Acceptance(drafts, per_pos, tuple(paths), "vllm bench")


# -- any of them -----------------------------------------------------------------------------------------


def _kind(text: str, file: str) -> str:
    head = text.lstrip()
    if head.startswith("{"):
        return "bench"
    if LOG_MARK in text:
        return "log"
    if PROM_PREFIX in text:
        return "prometheus"
    raise InputError(
        f"neither vLLM /metrics text, a log with '{LOG_MARK}' lines nor a vllm bench JSON",
        file=file,
        field="FILE",
    )


def read_acceptance(paths: list[str | Path]) -> Acceptance:
    """Read one kind of vLLM input from `paths` (see the module docstring) into pooled counts."""
    if not paths:
        raise InputError("no input files", field="FILE")
    files = [str(p) for p in paths]
    texts = []
    for f in files:  # regular files only, capped (a FIFO or /dev/zero is refused before a byte is read)
        texts.append(inputs.read_text(f, what="vLLM input", limit=inputs.LIMITS["log"], errors="replace"))
    with inputs.reading(files[0] if len(files) == 1 else ", ".join(files)):
        return _read_kind(files, texts)


def _read_kind(files: list[str], texts: list[str]) -> Acceptance:
    kinds = [_kind(t, f) for t, f in zip(texts, files)]
    if len(set(kinds)) > 1:
        raise InputError(
            f"is a {kinds[-1]} file but {files[0]} is a {kinds[0]} file: give files of one kind",
            file=files[-1],
            field="FILE",
        )
    if kinds[0] == "prometheus":
        return read_prometheus(files, texts)
    if kinds[0] == "log":
        return read_logs(files, texts)
    docs = []
    for f, t in zip(files, texts):
        docs.append(inputs.parse_json(t, f))
    return read_bench(files, docs)

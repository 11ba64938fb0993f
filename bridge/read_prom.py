"""vLLM's Prometheus spec-decode counters: a `/metrics` scrape, or the same series pasted as a table.

Role: one reader for (vLLM v1, 0.8 and later) `vllm:spec_decode_num_drafts_total`,
`..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and
`..._num_accepted_tokens_per_pos_total{position="i"}`, whatever the paste looks like:
- the exposition text itself (`name{labels} value [timestamp]`, `# HELP` / `# TYPE` lines, `_created`);
- the Prometheus UI's table or Grafana's (`name{labels} | value`, tabs, markdown pipes, spaces after the
  label commas, a time column in front, thousands separators, `vllm_spec_decode_...` with the colon
  turned into `_` by an exporter, `{__name__="vllm:...", ...}`), and names without `_total`.
Other `vllm:spec_decode_*` series are ignored. One file is cumulative since start; two files are a
before/after pair and the difference is used.

Consistency (each refusal names the file, line and series): a series twice with different values; the
per-position, drafted-tokens and accepted-tokens counters not covering the same engines/labels as the
drafts counter (a partial scrape); positions not 0..K−1 alike in every engine; a per-position count above
the drafts or above the previous position; drafted tokens above K × drafts (K disagrees with the number of
positions); per-position counts not summing to the accepted tokens (vLLM counts each accepted token once,
at its position); a counter lower in the second scrape (a restart, or the files swapped). A scrape with
drafts and accepted tokens but no per-position counter is τ-only (τ = 1 + accepted / drafts, exact).

May import: numpy, the standard library, `specsched.io.errors`, `bridge.textutil`, `bridge.counts`.
"""

from __future__ import annotations

import math
import re

import numpy as np

from bridge.counts import Acceptance, TauOnly, check_counts
from bridge.textutil import lines, number
from specsched.io.errors import InputError

PROM_PREFIX = "vllm:spec_decode_"
PROM_DRAFTS = "vllm:spec_decode_num_drafts_total"
PROM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
PROM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
PROM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
KNOWN = (PROM_DRAFTS, PROM_PER_POS, PROM_DRAFT_TOKENS, PROM_ACCEPTED)
MARK = re.compile(r"vllm[:_]spec_decode_")

_NAME = re.compile(r"(vllm[:_]spec_decode_[A-Za-z0-9_]*)\s*(\{[^{}]*\})?")
_BY_LABEL = re.compile(r"(\{[^{}]*__name__\s*=\s*\"(vllm[:_]spec_decode_[A-Za-z0-9_]*)\"[^{}]*\})")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')

_COMMENT = re.compile(r"^[\s>|]*#")  # '# HELP' / '# TYPE', also quoted ('> # HELP') or in a table cell

#: display units Grafana puts after a rounded value ('1.23 K'): such a value is not the counter
_UNITS = {"K", "k", "M", "Mil", "B", "Bil", "G", "T", "Tri"}

Series = dict  # {(metric, labels): (value, line)}


def is_prometheus(text: str) -> bool:
    return MARK.search(text) is not None


def _labels(text: str, file: str, line: int) -> tuple[tuple[str, str], ...]:
    body, out, pos = text.strip()[1:-1], [], 0
    while pos < len(body.rstrip()):
        m = _LABEL.match(body, pos)
        if m is None:
            raise InputError(f"cannot parse labels {text}", file=file, line=line, field="labels")
        if m.group(1) != "__name__":
            out.append((m.group(1), m.group(2)))
        pos = m.end()
    return tuple(sorted(out))


def _canonical(name: str) -> str | None:
    """'vllm_spec_decode_num_drafts' → 'vllm:spec_decode_num_drafts_total'; None for other series."""
    name = PROM_PREFIX + name[len(PROM_PREFIX) :]
    if name.endswith("_created"):
        return None
    if not name.endswith("_total"):
        name += "_total"
    return name if name in KNOWN else None


def _sample(line: str, file: str, lineno: int, below: str = "") -> tuple[str, tuple, float] | None:
    """(metric, labels, value) of one exposition or table line (the value may be alone on the line
    `below`, as a browser copies the Prometheus UI's table); None for other lines."""
    m = _BY_LABEL.search(line)
    name, labels, end = (m.group(2), m.group(1), m.end()) if m else (None, None, 0)
    if m is None:
        m = _NAME.search(line)
        if m is None:
            return None
        name, labels, end = m.group(1), m.group(2), m.end()
    metric = _canonical(name)
    if metric is None:
        return None
    if labels and '=""' in labels:  # a CSV export doubles the quotes inside a quoted cell
        labels = labels.replace('""', '"')
    rest = [t for t in re.split(r"[\s|;]+", line[end:].lstrip(' \t,|"')) if t]
    if not rest and number(below.strip(" |\t")) is not None:
        rest = [below.strip(" |\t")]
    value = number(rest[0].rstrip('",')) if rest else None
    if value is None:
        what = f"not a number: {rest[0]!r}" if rest else "no value after the series"
        raise InputError(what, file=file, line=lineno, field=metric)
    if len(rest) > 1 and rest[1].rstrip('",') in _UNITS:
        raise InputError(f"{rest[0]} {rest[1]} is rounded to display units: paste the raw counter value",
                         file=file, line=lineno, field=metric)  # fmt: skip
    if not math.isfinite(value) or value < 0:
        raise InputError(f"counter value {value!r} is not a finite number >= 0", file=file, line=lineno,
                         field=metric)  # fmt: skip
    return metric, _labels(labels, file, lineno) if labels else (), value


def series_of(text: str, file: str) -> Series:
    """{(metric, labels): (value, line)} of the spec-decode counters in one scrape or pasted table."""
    out: Series = {}
    numbered = lines(text)
    for j, (lineno, line) in enumerate(numbered):
        if MARK.search(line) is None or _COMMENT.match(line):
            continue
        got = _sample(line, file, lineno, numbered[j + 1][1] if j + 1 < len(numbered) else "")
        if got is None:
            continue
        metric, labels, value = got
        key = (metric, labels)
        if key in out and out[key][0] != value:
            raise InputError(
                f"appears twice with different values ({out[key][0]:g} on line {out[key][1]}, {value:g} "
                "here): give one scrape per file (two files for a before/after pair)",
                file=file, line=lineno, field=series_name(*key),
            )  # fmt: skip
        out.setdefault(key, (value, lineno))
    return out


def series_name(name: str, labels: tuple) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def _group(labels: tuple) -> tuple:
    return tuple((k, v) for k, v in labels if k != "position")


def _by_group(series: Series, file: str) -> dict[str, dict[tuple, dict]]:
    """{metric: {labels without position: {position or None: (value, line)}}}."""
    out: dict[str, dict[tuple, dict]] = {m: {} for m in KNOWN}
    for (name, labels), (value, lineno) in series.items():
        pos = None
        if name == PROM_PER_POS:
            p = dict(labels).get("position")
            if p is None or not p.isdigit():
                raise InputError(f"position label {p!r} is not an integer >= 0", file=file, line=lineno,
                                 field=f"{PROM_PER_POS}{{position}}")  # fmt: skip
            pos = int(p)
        out[name].setdefault(_group(labels), {})[pos] = (value, lineno)
    return out


def _coverage(groups: dict, file: str) -> None:
    """Every counter present covers exactly the drafts counter's engines/labels."""
    drafts = set(groups[PROM_DRAFTS])
    for metric in (PROM_PER_POS, PROM_DRAFT_TOKENS, PROM_ACCEPTED):
        have = set(groups[metric])
        if not have or have == drafts:
            continue
        lacking, extra = sorted(drafts - have), sorted(have - drafts)
        if lacking:
            line = groups[PROM_DRAFTS][lacking[0]][None][1]
            raise InputError(
                f"missing for {series_name('', lacking[0])[1:-1] or 'the unlabelled series'}: the drafts "
                f"counter has {len(drafts)} series ({_span(drafts)}) but this one {len(have)} "
                f"({_span(have)}); a partial scrape would give a wrong τ",
                file=file, line=line, field=metric,
            )  # fmt: skip
        line = min(v[1] for v in groups[metric][extra[0]].values())
        raise InputError(
            f"has series {series_name('', extra[0])[1:-1]} that the drafts counter lacks: a partial scrape",
            file=file, line=line, field=metric,
        )  # fmt: skip


def _span(groups) -> str:
    engines = sorted({dict(g).get("engine", "") for g in groups})
    return "engine " + ", ".join(engines) if engines and engines != [""] else "labels " + ", ".join(
        series_name("", g)[1:-1] or "none" for g in sorted(groups)
    )


def _positions(groups: dict, file: str) -> int:
    """K, the same 0..K−1 positions in every engine."""
    k_of = {}
    for g, pos in groups[PROM_PER_POS].items():
        k = max(pos) + 1
        for i in range(k):
            if i not in pos:
                raise InputError(
                    f"missing position {i} (positions 0..{k - 1} expected)",
                    file=file, field=series_name(PROM_PER_POS, (*g, ("position", str(i)))),
                )  # fmt: skip
        k_of[g] = k
    ks = sorted(set(k_of.values()))
    if len(ks) > 1:
        g_lo = min(k_of, key=k_of.get)
        raise InputError(
            f"has {k_of[g_lo]} positions but another engine has {ks[-1]}: missing position {k_of[g_lo]}",
            file=file, field=series_name(PROM_PER_POS, (*g_lo, ("position", str(k_of[g_lo])))),
        )  # fmt: skip
    return ks[0]


def _totals(groups: dict, k: int, file: str) -> tuple[float, np.ndarray]:
    """Summed drafts and per-position counts after the per-engine and total checks."""
    drafts, per_pos = 0.0, np.zeros(k)
    for g, pos in groups[PROM_PER_POS].items():
        d, _line = groups[PROM_DRAFTS][g][None]
        counts = np.array([pos[i][0] for i in range(k)], dtype=np.float64)
        check_counts(d, counts, file, pos[0][1], series_name(PROM_DRAFTS, g),
                     lambda i, g=g: series_name(PROM_PER_POS, (*g, ("position", str(i)))))  # fmt: skip
        drafts += d
        per_pos += counts
    tokens = [v[None][0] for v in groups[PROM_DRAFT_TOKENS].values()]
    if tokens and sum(tokens) > k * drafts * (1 + 1e-6) + 0.5:
        raise InputError(
            f"{sum(tokens):g} drafted tokens over {drafts:g} drafts is {sum(tokens) / drafts:.3f} per draft, "
            f"more than the {k} positions of {PROM_PER_POS}: K disagrees with the positions (some missing)",
            file=file, field=PROM_DRAFT_TOKENS,
        )  # fmt: skip
    accepted = [v[None][0] for v in groups[PROM_ACCEPTED].values()]
    if accepted and abs(sum(accepted) - per_pos.sum()) > max(2.0, 1e-3 * sum(accepted)):
        raise InputError(
            f"per-position counts sum to {per_pos.sum():g} but {sum(accepted):g} tokens were accepted: "
            "a position or an engine is missing from the per-position counter",
            file=file, field=PROM_ACCEPTED,
        )  # fmt: skip
    return drafts, per_pos


def _tau_only(groups: dict, file: str) -> TauOnly:
    """Drafts and accepted tokens but no per-position counter: τ = 1 + accepted / drafts, exactly."""
    if not groups[PROM_ACCEPTED]:
        raise InputError("missing counter (no per-position counts)", file=file, field=PROM_PER_POS)
    _coverage(groups, file)
    drafts = sum(v[None][0] for v in groups[PROM_DRAFTS].values())
    accepted = sum(v[None][0] for v in groups[PROM_ACCEPTED].values())
    tokens = sum(v[None][0] for v in groups[PROM_DRAFT_TOKENS].values())
    if drafts <= 0:
        raise InputError("zero drafts: no speculation was measured", file=file, field=PROM_DRAFTS)
    per = tokens / drafts
    k = round(per) if per >= 1 and abs(per - round(per)) < 1e-9 else None
    note = f"τ = 1 + accepted / drafts exact; no {PROM_PER_POS} counter"
    return TauOnly(1.0 + accepted / drafts, k, drafts, file, None, "a Prometheus scrape", (note,))


def counts_of(series: Series, file: str) -> Acceptance | TauOnly:
    """The summed counters of one scrape (or a pair's difference) after every consistency check."""
    models = {v for (_, labels) in series for k, v in labels if k == "model_name"}
    if len(models) > 1:
        raise InputError(f"counters of several models ({', '.join(sorted(models))}): scrape one model per "
                         "file", file=file, field="model_name")  # fmt: skip
    groups = _by_group(series, file)
    if not groups[PROM_DRAFTS]:
        raise InputError("missing counter (is speculative decoding on? vLLM before 0.8 exports no drafts "
                         "counter)", file=file, field=PROM_DRAFTS)  # fmt: skip
    if not groups[PROM_PER_POS]:
        return _tau_only(groups, file)
    _coverage(groups, file)
    drafts, per_pos = _totals(groups, _positions(groups, file), file)
    check_counts(drafts, per_pos, file, None, PROM_DRAFTS, lambda i: f'{PROM_PER_POS}{{position="{i}"}}')
    return Acceptance(drafts, per_pos, (file,), "prometheus", ("drafts and per-position counts exact",))


def _difference(paths: list[str], before: Series, after: Series) -> Series:
    diff = {}
    for key, (value, lineno) in after.items():
        if key not in before and (PROM_DRAFTS, _group(key[1])) in before:
            raise InputError(
                f"missing from {paths[0]} although its engine's drafts counter is there: the first scrape is "
                "partial (its difference would count everything since start)",
                file=paths[1], line=lineno, field=series_name(*key),
            )  # fmt: skip
        old = before.get(key, (0.0, None))[0]
        if value < old:
            raise InputError(
                f"counter fell from {old:g} to {value:g} between {paths[0]} and this scrape "
                "(a restart between the scrapes, or the files in the wrong order)",
                file=paths[1], line=lineno, field=series_name(*key),
            )  # fmt: skip
        diff[key] = (value - old, lineno)
    for key, (_value, lineno) in before.items():
        if key not in after:
            raise InputError("counter present before but missing after (a restart between the scrapes?)",
                             file=paths[0], line=lineno, field=series_name(*key))  # fmt: skip
    return diff


def read_prometheus(paths: list[str], texts: list[str]) -> Acceptance | TauOnly:
    """One cumulative scrape, or a before/after pair (the difference of every counter)."""
    if len(paths) > 2:
        raise InputError(f"{len(paths)} Prometheus scrapes: give one (cumulative) or two (before, after)",
                         file=paths[2], field="FILE")  # fmt: skip
    scrapes = [series_of(t, p) for p, t in zip(paths, texts)]
    if len(scrapes) == 1:
        return counts_of(scrapes[0], paths[0])
    acc = counts_of(_difference(paths, *scrapes), paths[1])
    if isinstance(acc, TauOnly):
        return TauOnly(**{**acc.__dict__, "sources": tuple(paths)})
    return Acceptance(acc.drafts, acc.per_pos, tuple(paths), "prometheus pair", acc.notes)

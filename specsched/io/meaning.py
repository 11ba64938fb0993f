"""Meaning checks of measured serving metrics: units, orderings, rates, a run's own counts.

Role: one checker for every file that carries a measured run's latency summary, whatever its layout:
RUNS.csv rows (`validate.runs`: `actual_e2e_p90`, ...), `vllm bench serve` results (`bridge.bench`, the
save-result keys `p99_ttft_ms`, ...; and the JSON `validate` replays). A reader maps its fields to
(family, statistic) with `metrics_of` and calls `check_metrics`; a bench result's counts and rates go
through `check_bench_rates`. A failed check is one `InputError` naming file, row and field: a file that
parses but cannot be what it says (a column in seconds where milliseconds are meant, a p99 below its p90,
a TTFT above its end-to-end latency, a throughput its own counts contradict) is refused, not modelled.

The bounds are physical, not fitted: no GPU serves one sequence a token in under `MS_PER_TOKEN_FLOOR`
(10,000 tokens/s), no API server answers a first token in under `TTFT_FLOOR_MS`; a metric in seconds
read as milliseconds is 1000× below both. Summaries of one run may come from slightly different request
sets (inference-perf's TTFT and e2e over its streams), so orderings hold within `ORDER_SLACK`.

May import: the standard library, `specsched.io.errors`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from specsched.io.errors import InputError

#: ms a token: no GPU decodes one sequence faster (a per-token time or e2e / output below it is seconds)
MS_PER_TOKEN_FLOOR = 0.1
#: ms a token: no served decode step is slower (a per-token time above it is in a finer unit)
MS_PER_TOKEN_CEIL = 10_000.0
#: ms: no served first token comes sooner (HTTP, tokenization and one forward pass)
TTFT_FLOOR_MS = 0.5
#: relative slack of an ordering (p50 ≤ p90 ≤ p99, TTFT ≤ e2e) between summaries of one run
ORDER_SLACK = 0.01
#: (e2e − TTFT) / (output − 1) beside the mean ITL: a chunk is 1 to ~10 tokens; outside this, units differ
CHUNK_RATIO = (1.0 / 50.0, 50.0)
#: a throughput beside its own count / duration: equal by definition; beyond this factor, one is wrong
RATE_FACTOR = 2.0

_STAT = re.compile(r"^(mean|median|p\d+(?:\.\d+)?)$")


def percentile(stat: str) -> float | None:
    """The percentile a statistic names ("p99" 99, "median" 50), None for the mean."""
    if stat == "median":
        return 50.0
    return float(stat[1:]) if stat.startswith("p") else None


def metrics_of(fields: Mapping[str, object], pattern: str, families: Mapping[str, str]) -> dict:
    """{(family, stat): (field, value)} of the numeric `fields` whose name fits `pattern` (a regex with
    groups `fam` and `stat`); `families` maps a file's family name to the common one (e2el -> e2e)."""
    rx = re.compile(pattern)
    out = {}
    for name, value in fields.items():
        m = rx.match(name)
        if m is None or m["fam"] not in families or not _STAT.match(m["stat"]):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        out[(families[m["fam"]], m["stat"])] = (name, float(value))
    return out


def _fail(message: str, file, line, field) -> None:
    raise InputError(message, file=file, line=line, field=field)


def check_metrics(
    metrics: Mapping[tuple[str, str], tuple[str, float]],
    *,
    file: str | None,
    line: int | None = None,
    output_mean: float | None = None,
    unit: str = "ms",
) -> None:
    """Every meaning check of one run's latency summary (module docstring), in the order that names the
    cause: signs, units, orderings inside a family, TTFT ≤ e2e, then e2e/TTFT against the ITL.
    metrics: `metrics_of`'s; families "e2e", "ttft", "itl", "tpot"; values in `unit`.
    output_mean: the run's mean output tokens (None: the e2e unit check is skipped). unit: the file's
    ("ms", or "s" for per-request seconds), named in the messages."""
    for field, value in metrics.values():
        if value < 0:
            _fail(f"must be ≥ 0 {unit}, got {value:g}", file, line, field)
    _check_units(metrics, file, line, output_mean, unit)
    for fam in sorted({f for f, _ in metrics}):
        ranked = sorted(
            ((percentile(s), name, v) for (f, s), (name, v) in metrics.items() if f == fam and percentile(s)),
        )
        for (p_lo, lo_name, lo), (p_hi, hi_name, hi) in zip(ranked, ranked[1:], strict=False):
            if p_hi > p_lo and hi < lo * (1.0 - ORDER_SLACK):
                _fail(f"{hi:g} is below {lo_name} ({lo:g}): a p{p_hi:g} cannot be below a p{p_lo:g}",
                      file, line, hi_name)  # fmt: skip
    for (fam, stat), (name, ttft) in sorted(metrics.items()):
        if fam == "ttft" and ("e2e", stat) in metrics:
            e2e_name, e2e = metrics[("e2e", stat)]
            if ttft > e2e * (1.0 + ORDER_SLACK):
                _fail(f"{ttft:g} is above {e2e_name} ({e2e:g}): a first token cannot come after the last",
                      file, line, name)  # fmt: skip
    _check_chunks(metrics, file, line, output_mean)


#: a unit 1000× coarser / finer than the one a file means, by that unit
_COARSER = {"ms": "seconds", "s": "kiloseconds"}
_FINER = {"ms": "microseconds", "s": "milliseconds"}


def _check_units(metrics, file, line, output_mean, unit) -> None:
    """A family 1000× off (seconds where milliseconds are meant, or the reverse): beyond a physical bound.
    Only means and medians are judged: a low percentile of a skewed run may be small."""
    per_ms = {"ms": 1.0, "s": 1e3}[unit]
    small = f"looks like {_COARSER[unit]} ({unit} are meant)"
    big = f"looks like {_FINER[unit]} ({unit} are meant)"
    out = output_mean or 0.0
    for (fam, stat), (name, v) in sorted(metrics.items()):
        if stat not in ("mean", "median"):
            continue
        if v == 0 and (fam in ("ttft", "e2e") or out > 1.5):  # a 1-token run has no gap: ITL 0 is vLLM's
            _fail(f"is 0 {unit}: no served run is that fast", file, line, name)
        if v <= 0:
            continue
        ms = v * per_ms
        token_ms = ms if fam in ("itl", "tpot") else ms / out if fam == "e2e" and out > 0 else None
        if token_ms is not None and token_ms < MS_PER_TOKEN_FLOOR:
            _fail(f"{v:g} {unit} is {token_ms:.3g} ms a token, faster than any GPU decodes a sequence: "
                  f"{small}", file, line, name)  # fmt: skip
        if fam in ("itl", "tpot") and token_ms > MS_PER_TOKEN_CEIL:  # e2e / output: queueing too
            _fail(f"{v:g} {unit} is {token_ms:.3g} ms a token, slower than any served decode step: {big}",
                  file, line, name)  # fmt: skip
        if fam == "ttft" and ms < TTFT_FLOOR_MS:
            _fail(f"a first token in {ms:.3g} ms is sooner than any server answers: {small}", file, line,
                  name)  # fmt: skip


def _check_chunks(metrics, file, line, output_mean) -> None:
    """(e2e − TTFT) / (output − 1) against the ITL: a chunk carries 1 to a few tokens, never 1000."""
    need = (("e2e", "mean"), ("ttft", "mean"), ("itl", "mean"))
    if not output_mean or output_mean <= 1.5 or any(k not in metrics for k in need):
        return
    e2e, ttft, (itl_name, itl) = (metrics[k] for k in need)
    per_token = (e2e[1] - ttft[1]) / (output_mean - 1.0)
    if itl <= 0 or per_token <= 0:
        return
    ratio = per_token / itl
    if not CHUNK_RATIO[0] <= ratio <= CHUNK_RATIO[1]:
        _fail(f"{itl:g} beside a per-token time of {per_token:.4g} from {e2e[0]} and {ttft[0]} "
              f"(×{ratio:.3g}): one of them is in other units", file, line, itl_name)  # fmt: skip


def _number(doc: Mapping, key: str) -> float | None:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def check_bench_rates(doc: Mapping, *, file: str | None) -> None:
    """A `vllm bench serve` result's counts against its rates: completed ≥ 1 (nothing to compare else),
    no negative count or throughput, each throughput its own count / duration (within ×`RATE_FACTOR`),
    no request longer than the run, and no more finished per second than were sent (request_rate)."""
    for key in ("completed", "total_input_tokens", "total_output_tokens", "duration", "request_throughput",
                "output_throughput", "total_token_throughput"):  # fmt: skip
        v = _number(doc, key)
        if v is not None and v < 0:
            _fail(f"must be ≥ 0, got {v:g}", file, None, key)
    done, dur = _number(doc, "completed"), _number(doc, "duration")
    if done is not None and done < 1:
        _fail("no request completed: there is nothing to compare or model", file, None, "completed")
    if dur is not None and dur <= 0:
        _fail(f"must be > 0 s, got {dur:g}", file, None, "duration")
    if not done or not dur:
        return
    tin, tout = _number(doc, "total_input_tokens"), _number(doc, "total_output_tokens")
    own = {"request_throughput": done / dur,
           "output_throughput": None if tout is None else tout / dur,
           "total_token_throughput": None if tin is None or tout is None else (tin + tout) / dur}  # fmt: skip
    for key, expect in own.items():
        v = _number(doc, key)
        if v is not None and expect and not expect / RATE_FACTOR <= v <= expect * RATE_FACTOR:
            _fail(f"{v:g} /s, but the file's own counts over its duration give {expect:.4g} /s", file, None,
                  key)  # fmt: skip
    for key in ("p99_e2el_ms", "mean_e2el_ms", "median_e2el_ms", "p99_ttft_ms"):
        v = _number(doc, key)
        if v is not None and v > dur * 1e3 * (1.0 + ORDER_SLACK) + 1.0:
            _fail(f"{v:g} ms is longer than the whole run ({dur:g} s): a unit is off", file, None, key)
    rate = _number(doc, "request_rate")
    if rate and done >= 10 and done / dur > 3.0 * rate:
        _fail(f"{rate:g} req/s, but {done:g} requests finished in {dur:g} s ({done / dur:.4g} /s): more "
              "finished than were sent", file, None, "request_rate")  # fmt: skip


#: `vllm bench serve` save-result keys: {stat}_{family}_ms
BENCH_PATTERN = r"^(?P<stat>mean|median|p\d+(?:\.\d+)?)_(?P<fam>ttft|tpot|itl|e2el)_ms$"
BENCH_FAMILIES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}


def check_bench_result(doc: Mapping, *, file: str | None) -> None:
    """Every meaning check of a `vllm bench serve --save-result` dict (latencies in ms)."""
    check_bench_rates(doc, file=file)
    done, tout = _number(doc, "completed"), _number(doc, "total_output_tokens")
    out_mean = tout / done if done and tout is not None else None
    check_metrics(metrics_of(doc, BENCH_PATTERN, BENCH_FAMILIES), file=file, output_mean=out_mean)

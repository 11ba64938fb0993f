"""Measured vLLM runs as `specbed validate` and `specbed cost calibrate` read them.

Role: parse RUNS.csv (the columns of ../shared/real-vllm/runs.csv; any subset of rows, any order) and
`vllm bench serve --save-result --save-detailed` JSON files into `MeasuredRun`s: the deployment (a
`specsched.price.vllm.VllmSpec` from the row's knobs), where its traffic comes from (an inference-perf
profile,
or the bench file's own requests) and the measured metrics in milliseconds. Malformed input is one
InputError naming file, row and field; a well-formed row that specbed cannot model (a model or GPU the
catalogue does not know, a profile the profiles file lacks) becomes a run with `error` set.

May import: numpy, the standard library, `sim`, `specsched`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sim.workload import Workload
from specsched.io import inputs as inp
from specsched.io.errors import InputError, bounded
from specsched.io.meaning import check_bench_result, check_metrics, metrics_of
from specsched.price import GPU_MEMORY_UTILIZATION, find_model, get_gpu, precision_bytes
from specsched.price.vllm import VllmSpec

METRICS = ("e2e_mean", "e2e_p90", "e2e_p99", "ttft_mean", "ttft_p90", "ttft_p99", "itl_mean")


def latency_metrics(e2e_ms: np.ndarray, ttft_ms: np.ndarray, itl_ms: float) -> dict[str, float]:
    """The `METRICS` of one run (ms) from its per-request e2e and TTFT and its mean inter-token latency:
    the measured side and the predicted side are summarized by this one function."""
    return {
        "e2e_mean": float(e2e_ms.mean()),
        "e2e_p90": float(np.percentile(e2e_ms, 90)),
        "e2e_p99": float(np.percentile(e2e_ms, 99)),
        "ttft_mean": float(ttft_ms.mean()),
        "ttft_p90": float(np.percentile(ttft_ms, 90)),
        "ttft_p99": float(np.percentile(ttft_ms, 99)),
        "itl_mean": float(itl_ms),
    }


def itl_readings(actual: dict[str, float], token_ms: float, output_mean: float) -> dict:
    """Both inter-token readings of a measured run beside the prediction (ms), and the chunk fraction.

    A client's ITL is the gap between streamed chunks, and a token that completes no text streams none,
    so chunks per token is a property of the text, measured here, not a catalogue constant: a run's
    per-token time is (e2e − TTFT)/(output − 1) from its means (exact pooled over tokens: Σ(e2e − TTFT)
    / Σ(output − 1)), and chunk_fraction = that / its ITL. The predicted per-chunk ITL is the predicted
    per-token time over the measured fraction, so its error is the per-token time's error.
    token_ms: predicted per-token time; output_mean: the run's mean output tokens (ignore_eos: as asked).
    chunk_fraction is None where undefined (one-token outputs, no ITL): per chunk = per token then."""
    gaps = output_mean - 1.0
    per_token = (actual["e2e_mean"] - actual["ttft_mean"]) / gaps if gaps > 0 else math.nan
    frac = per_token / actual["itl_mean"] if actual["itl_mean"] > 0 else math.nan
    ok = math.isfinite(frac) and frac > 0
    return {
        "chunk_fraction": frac if ok else None,
        "measured_per_token_ms": per_token if math.isfinite(per_token) else None,
        "measured_per_chunk_ms": actual["itl_mean"],
        "predicted_per_token_ms": token_ms,
        "predicted_per_chunk_ms": token_ms / frac if ok else token_ms,
    }


def output_mean(run: MeasuredRun, profiles) -> float:
    """A run's mean output tokens as its traffic asks them (ignore_eos): its profile's, or its requests'."""
    if run.workload is not None:
        return float(run.workload.output_tokens.mean())
    return float(profiles[run.profile].output_tokens)


REQUIRED = ("exp_id", "model", "hardware", "tp", "workload", "max_num_batched_tokens")
#: the measurement campaign's constants (workloads.json: campaign_values.constants)
DEFAULT_MAX_NUM_SEQS = 128
DEFAULT_MAX_MODEL_LEN = 4096


#: bounds of the knobs a row (or a flag standing for its missing column) may give: sim.bounds' and vLLM's
MAX_SEQS, MAX_MODEL_LEN, MAX_SEED = 16_384, 10_000_000, 2**63 - 1


def add_run_flags(parser) -> None:
    """The flags `validate` and `cost calibrate` share: --seed and the knobs rows may leave out, each an
    argparse `bounded` type (a bad value: one line naming the flag)."""
    parser.add_argument("--seed", type=bounded(int, 0, MAX_SEED), default=0)
    parser.add_argument(
        "--max-num-seqs",
        type=bounded(int, 1, MAX_SEQS),
        default=DEFAULT_MAX_NUM_SEQS,
        help=f"for rows without a max_num_seqs column (default {DEFAULT_MAX_NUM_SEQS})",
    )
    parser.add_argument(
        "--max-model-len",
        type=bounded(int, 1, MAX_MODEL_LEN),
        default=DEFAULT_MAX_MODEL_LEN,
        help=f"for rows without a max_model_len column (default {DEFAULT_MAX_MODEL_LEN})",
    )


@dataclass(frozen=True)
class MeasuredRun:
    """One measured run. actual: METRICS in ms; profile: the inference-perf profile its traffic came
    from (None for a bench file, whose requests are in `workload`); error: why it cannot be modelled."""

    exp_id: str
    folder: str
    model: str
    hardware: str
    spec: VllmSpec | None
    profile: str | None
    actual: dict[str, float]
    where: str
    error: str | None = None
    workload: Workload | None = field(default=None, compare=False)
    #: a bench file's max_concurrency: its client kept this many requests in flight (None: no cap)
    concurrency: int | None = None
    error_field: str | None = None  # the column that stopped it (with `where`: file and row)


def _cell(row: dict, key: str, path: str, line: int, kind=float, *, default=None, lo=None, hi=None):
    raw = (row.get(key) or "").strip()
    if raw == "":
        if default is not None or key not in REQUIRED:
            return default
        raise InputError("is empty", file=path, line=line, field=key)
    try:
        val = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise InputError(f"must be {what}, got {raw!r}", file=path, line=line, field=key) from None
    if isinstance(val, float) and not math.isfinite(val):
        raise InputError(f"must be finite, got {raw!r}", file=path, line=line, field=key)
    if (lo is not None and val < lo) or (hi is not None and val > hi):
        raise InputError(f"must be in [{lo}, {hi}], got {raw!r}", file=path, line=line, field=key)
    return val


def _offload(row: dict, path: str, line: int) -> float:
    """cpu_offload: empty / 0 / false = none; true = 32 GiB a GPU; a number = that many GiB (see docs)."""
    raw = (row.get("cpu_offload") or "").strip().lower()
    if raw in ("", "0", "false", "no", "none", "off"):
        return 0.0
    if raw in ("true", "yes", "on"):
        return 32.0
    return _cell(row, "cpu_offload", path, line, lo=0.0, hi=10_000.0)


def profile_of(workload: str, folder: str, profiles) -> str | None:
    """The profile of a run: the `-lite` variant when the folder says so and it exists."""
    lite = f"{workload}-lite"
    if lite in folder and lite in profiles:
        return lite
    return workload if workload in profiles else None


def _row_run(row: dict, path: str, line: int, profiles, seqs: int, model_len: int) -> MeasuredRun:
    actual = {m: _cell(row, f"actual_{m}", path, line, lo=0.0, hi=1e9) for m in METRICS}
    if any(v is None for v in actual.values()):
        missing = next(m for m, v in actual.items() if v is None)
        raise InputError("is empty", file=path, line=line, field=f"actual_{missing}")
    for m, v in actual.items():  # every error % divides by it: a 0 ms latency is no measurement
        if v == 0:
            raise InputError("must be > 0 ms (a measured latency of 0 is no measurement)",
                             file=path, line=line, field=f"actual_{m}")  # fmt: skip
    ident = {k: (row.get(k) or "").strip() for k in ("exp_id", "folder", "model", "hardware", "workload")}
    profile = profile_of(ident["workload"], ident["folder"], profiles)
    out_mean = float(profiles[profile].output_tokens) if profile is not None else None
    check_metrics(_row_metrics(row, actual, path, line), file=path, line=line, output_mean=out_mean)
    knobs = _row_knobs(row, path, line, seqs, model_len)
    base = dict(exp_id=ident["exp_id"], folder=ident["folder"], model=ident["model"],
                hardware=ident["hardware"], actual=actual, where=f"{path}:{line}")  # fmt: skip
    found = find_model(ident["model"])
    precision = (row.get("precision") or "").strip() or None
    try:  # a well-formed row specbed cannot model: the run carries why, and the column that stopped it
        gpu = get_gpu(ident["hardware"], field="hardware").key
        if found is None:
            raise InputError(f"model {ident['model']!r} is not in the catalogue", field="model")
        precision_bytes(precision, found, field="precision")
        if profile is None:
            raise InputError(f"no profile {ident['workload']!r} in the profiles file", field="workload")
    except InputError as err:  # the error names its file, row and column (the table shows it)
        why = str(InputError(err.message, file=path, line=line, field=err.field))
        return MeasuredRun(spec=None, profile=profile, error=why, error_field=err.field, **base)
    spec = VllmSpec(model=found.name, gpu=gpu, precision=precision and precision.lower(), **knobs)
    check_rate(spec, profiles[profile], actual, path, line)
    return MeasuredRun(spec=spec, profile=profile, **base)


def _row_knobs(row: dict, path: str, line: int, seqs: int, model_len: int) -> dict:
    """The row's vLLM knobs as `VllmSpec` keywords (InputError naming a malformed cell)."""
    seqs = _cell(row, "max_num_seqs", path, line, int, default=seqs, lo=1, hi=MAX_SEQS)
    mnbt = _cell(row, "max_num_batched_tokens", path, line, int, lo=1, hi=10_000_000)
    return dict(
        tp=_cell(row, "tp", path, line, int, lo=1, hi=4096),
        dp=_cell(row, "dp", path, line, int, default=1, lo=1, hi=4096),
        gpu_memory_utilization=_cell(
            row, "gpu_mem_util", path, line, default=GPU_MEMORY_UTILIZATION, lo=0.01, hi=1.0
        ),  # fmt: skip
        max_model_len=_cell(row, "max_model_len", path, line, int, default=model_len, lo=1, hi=MAX_MODEL_LEN),
        max_num_seqs=seqs,
        max_num_batched_tokens=max(mnbt, seqs),
        kv_offload_gib=_offload(row, path, line),
    )


#: RUNS.csv latency columns: actual_{family}_{stat} (METRICS and any further percentile)
ROW_PATTERN = r"^actual_(?P<fam>e2e|ttft|itl|tpot)_(?P<stat>mean|median|p\d+(?:\.\d+)?)$"
#: the offered decode concurrency (Little's law) may pass max_num_seqs × dp by this factor (stage edges)
LITTLE_SLACK = 2.0


def _row_metrics(row: dict, actual: dict, path: str, line: int) -> dict:
    """`specsched.io.meaning.metrics_of` a row: METRICS and any further actual_* percentile column."""
    extra = {k: _cell(row, k, path, line, lo=0.0, hi=1e9) for k in row if k and k.startswith("actual_")}
    cells = {k: v for k, v in extra.items() if v is not None} | {f"actual_{m}": actual[m] for m in METRICS}
    return metrics_of(cells, ROW_PATTERN, {f: f for f in ("e2e", "ttft", "itl", "tpot")})


def check_rate(spec: VllmSpec, profile, actual: dict, path: str, line: int) -> None:
    """The profile's rate against the row's own latencies: by Little's law the sequences decoding at once
    average λ · (e2e − TTFT) (λ the profile's requests over its duration), which vLLM caps at
    max_num_seqs × dp; far above it, the profile's rates (or the row's units) are not this run's."""
    lam = profile.num_requests / profile.duration_s if profile.duration_s > 0 else 0.0
    busy = lam * max(actual["e2e_mean"] - actual["ttft_mean"], 0.0) / 1e3
    cap = spec.max_num_seqs * spec.dp
    if busy > LITTLE_SLACK * cap:
        raise InputError(
            f"profile {profile.name!r} sends {lam:.3g} req/s; with this row's decode time "
            f"(e2e − TTFT, {actual['e2e_mean'] - actual['ttft_mean']:.4g} ms) that is {busy:.0f} sequences "
            f"decoding at once (Little's law), above max_num_seqs × dp = {cap}: the profile's rates or the "
            "row's units are not this run's",
            file=path, line=line, field="workload",
        )  # fmt: skip


def _csv_rows(text: str, path: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """(header, [(line, row)]) of a CSV table; a malformed one (a cell over the csv module's field limit,
    a NUL) is one InputError naming the line."""
    reader = csv.DictReader(text.splitlines())
    try:
        header = list(reader.fieldnames or [])
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as err:
        raise InputError(f"not a valid CSV table ({err})", file=path, line=reader.line_num + 1) from None
    return header, rows


def read_runs(
    path: str | Path,
    profiles,
    *,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
) -> list[MeasuredRun]:
    """Every row of a RUNS.csv (InputError naming file, row and field for a malformed one)."""
    p = str(path)
    text = inp.read_text(path, what="runs table", limit=inp.LIMITS["table"])  # regular file, capped
    header, rows = _csv_rows(text, p)
    for key in (*REQUIRED, *(f"actual_{m}" for m in METRICS)):
        if key not in header:
            raise InputError(f"missing column {key!r}", file=p, line=1)
    runs = [_row_run(row, p, line, profiles, max_num_seqs, max_model_len) for line, row in rows]
    if not runs:
        raise InputError("has a header but no rows", file=p)
    return runs


#: bound of every number of a bench file's per-request lists: a time (s) or a length (tokens); 1e308
#: overflowed the sums
MAX_PER_REQUEST = 1e8


def _floats(raw: dict, key: str, path: str, n: int | None = None) -> np.ndarray:
    vals = raw.get(key)
    ok = isinstance(vals, list) and vals and (n is None or len(vals) == n)
    # numbers only: numpy would read "1" and false as 1.0 and 0.0
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals)
    arr = np.asarray(vals if ok else [], dtype=object)
    if ok:
        try:
            arr = np.asarray(vals, dtype=np.float64)
        except (TypeError, ValueError):
            ok = False
    if not ok or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > MAX_PER_REQUEST):
        need = f"a list of {n} numbers" if n else "a non-empty list of numbers"
        need += f" in [0, {MAX_PER_REQUEST:g}]"
        raise InputError(f"must be {need}", file=path, field=key)
    return arr


def read_bench(path: str | Path, spec: VllmSpec, seed: int = 0) -> MeasuredRun:
    """A `vllm bench serve --save-result --save-detailed` JSON as a run: its requests (input_lens,
    output_lens; arrivals at its request_rate, Poisson, or all at once when it is inf) and its metrics
    (ttfts and itls per request, seconds)."""
    p = str(path)
    raw = inp.load_json(path, what="vllm bench result", nonfinite=True)  # regular, capped, bounded digits
    if not isinstance(raw, dict):
        raise InputError("must be a JSON object (vllm bench serve --save-result --save-detailed)", file=p)
    inputs = _floats(raw, "input_lens", p)
    n = inputs.size
    outputs = _floats(raw, "output_lens", p, n)
    ttfts = _floats(raw, "ttfts", p, n) * 1e3
    itls = raw.get("itls")
    if not isinstance(itls, list) or len(itls) != n or not all(isinstance(r, list) for r in itls):
        raise InputError(f"must be a list of {n} lists of seconds", file=p, field="itls")
    gaps = [g for r in itls for g in r]
    if not all(isinstance(g, (int, float)) and math.isfinite(g) and 0 <= g <= MAX_PER_REQUEST for g in gaps):
        raise InputError(f"must hold numbers in [0, {MAX_PER_REQUEST:g}] (seconds)", file=p, field="itls")
    e2e = ttfts + np.asarray([sum(r) for r in itls]) * 1e3
    _check_bench_meaning(raw, p, ttfts, e2e, gaps, outputs)
    rate = raw.get("request_rate", "inf")
    rate = math.inf if rate in ("inf", None) or rate == math.inf else rate
    if not (isinstance(rate, (int, float)) and rate > 0):
        raise InputError(f'must be a number > 0 or "inf", got {rate!r}', file=p, field="request_rate")
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    arrival = np.zeros(n) if math.isinf(rate) else np.cumsum(rng.exponential(1.0 / rate, size=n))
    wl = Workload(
        arrival_s=arrival,
        input_tokens=np.maximum(inputs, 1).astype(np.int64),
        output_tokens=np.maximum(outputs, 1).astype(np.int64),
        domain=np.zeros(n, dtype=np.int64),
        think_s=None,
        clipped=0,
    )
    actual = latency_metrics(e2e, ttfts, float(np.mean(gaps) * 1e3) if gaps else 0.0)
    model = str(raw.get("model_id") or spec.model)
    cap = raw.get("max_concurrency")
    if cap is not None:
        cap = inp.number(cap, file=p, field="max_concurrency", integer=True, lo=1, text=False)
    return MeasuredRun(
        exp_id=Path(p).stem,
        folder=Path(p).name,
        model=model,
        hardware=spec.gpu,
        spec=spec,
        profile=None,
        actual=actual,
        where=p,
        workload=wl,
        concurrency=None if cap is None else int(cap),
    )


def _check_bench_meaning(raw: dict, path: str, ttft_ms, e2e_ms, gaps_s: list, outputs) -> None:
    """A bench file's meaning (`specsched.io.meaning`): its save-result keys (counts, rates, orderings,
    units) and its per-request lists (seconds: a list in milliseconds is 1000× past a physical bound), and
    no request longer than the run's own duration."""
    check_bench_result(raw, file=path)
    per_request = {("ttft", "mean"): ("ttfts", float(ttft_ms.mean()) / 1e3),
                   ("e2e", "mean"): ("ttfts + itls", float(e2e_ms.mean()) / 1e3)}  # fmt: skip
    if gaps_s:
        per_request[("itl", "mean")] = ("itls", float(np.mean(gaps_s)))
    check_metrics(per_request, file=path, output_mean=float(outputs.mean()), unit="s")
    dur = raw.get("duration")
    if isinstance(dur, int | float) and not isinstance(dur, bool) and math.isfinite(dur) and dur > 0:
        decode = (e2e_ms - ttft_ms) / 1e3
        for key, longest in (("itls", decode.max()), ("ttfts", ttft_ms.max() / 1e3),
                             ("ttfts + itls", e2e_ms.max() / 1e3)):  # fmt: skip
            if longest > dur * 1.01 + 1e-3:
                raise InputError(f"a request spends {longest:.4g} s here, longer than the run's duration "
                                 f"{dur:g} s: the list is in other units", file=path, field=key)  # fmt: skip

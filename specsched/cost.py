"""Cost tables: how long one engine step takes as a function of the tokens it verifies.

Role: the hardware half of the scheduler's objective Θ = τ · sps(B). A `CostTable` maps the total number
of query tokens B in one step (B = Σ_r (1 + ℓ_r) + prefill tokens) to seconds, from measured points
(`from_points`, `from_csv`) or from a roofline (`roofline`, see `specsched.price.roofline`).

May import: numpy, the standard library, `specsched.io.errors`, `specsched.io.inputs`, `specsched.price`
(catalogue and roofline).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from specsched.io import inputs, safeio
from specsched.io.errors import InputError
from specsched.price import roofline
from specsched.price.gpus import GPU, get_gpu
from specsched.price.models import ModelShape, get_model

Mode = Literal["step", "linear"]

# Latencies for every integer B up to this bound are precomputed so that a policy's lookup of
# sps(R .. R + R·γ) is one slice, not a search (the scheduler runs every engine step).
_DENSE_MIN = 16_384
#: largest batch size (tokens per step) a table may list: the dense lookup holds 2× this many float64s
MAX_TOKENS = 1 << 20
#: a measured step time outside this range (seconds) is a unit error, not a GPU
MIN_STEP_S, MAX_STEP_S = 1e-9, 1e4


@dataclass(frozen=True, eq=False)
class CostTable:
    """Verify-step latency vs total verify tokens, plus a fixed draft cost per step.

    Attributes:
        tokens: int64[n], strictly increasing measured batch sizes B (tokens, ≥ 1).
        seconds: float64[n], latency of one verify forward at each size (seconds, > 0). Real profiles are
            jagged (not monotone); that is legal.
        mode: between measured sizes, "step" takes the next measured size at or above B (engines pad to
            captured CUDA-graph sizes); "linear" interpolates. Below the first size both take the first
            latency. Past the last size both extrapolate linearly from the last two points, with the slope
            clamped at ≥ 0 (a jagged tail must not predict shorter steps for bigger batches); a one-point
            table is flat.
        draft_seconds: fixed drafting cost added to every step (seconds). The drafter always drafts the full
            γ, so this does not depend on the verify lengths chosen; it still moves the optimum of Θ.
        layers: target layers, to price draft layers: `layer_seconds(B) = latency(B) / layers`.
        name: label for reports.
        request_seconds: cost per running request per step (seconds), independent of B (and, for a
            context-aware table, of its context): per-request work, or — for a table with a fixed assumed
            context — reading that context's KV. 0 for measured profiles (folded into the points).
        kv_token_seconds: cost per KV token of context the running requests hold, per step (seconds): the
            attention's KV reads. A whole step over R requests holding C KV tokens in all and B query tokens
            takes `draft_seconds + request_seconds·R + kv_token_seconds·C + latency(B)`; it does not depend
            on the verify lengths, so policies see it as part of the fixed term. 0 = context-blind.
        attn_pair_seconds: cost per causal query-key pair of a step's prefill chunks (seconds): prefill
            attention, quadratic in a prompt, so priced from the pairs the simulator counts
            (`specsched.stepcost.StepShape.pairs`), not from B. 0 = not priced (measured tables fold it in).
    """

    tokens: np.ndarray
    seconds: np.ndarray
    mode: Mode = "step"
    draft_seconds: float = 0.0
    layers: int = 1
    name: str = ""
    request_seconds: float = 0.0
    kv_token_seconds: float = 0.0
    attn_pair_seconds: float = 0.0
    _dense: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tokens = np.asarray(self.tokens)
        seconds = np.asarray(self.seconds, dtype=np.float64)
        if tokens.ndim != 1 or seconds.ndim != 1:
            raise ValueError(
                f"cost table: tokens and seconds must be 1-D (got ndim {tokens.ndim}, {seconds.ndim})"
            )
        if tokens.size == 0:
            raise ValueError("cost table: empty (no points)")
        if tokens.size != seconds.size:
            raise ValueError(f"cost table: {tokens.size} token sizes but {seconds.size} latencies")
        as_float = tokens.astype(np.float64)
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise ValueError(f"cost table: tokens must be whole numbers, got {tokens.tolist()[:8]}")
        if np.any(as_float > MAX_TOKENS):
            raise ValueError(f"cost table: tokens must be ≤ {MAX_TOKENS}, got {as_float.max():.6g}")
        tokens = tokens.astype(np.int64)
        if tokens[0] < 1:
            raise ValueError(f"cost table: tokens must be ≥ 1, got {int(tokens[0])}")
        steps = np.diff(tokens)
        if np.any(steps == 0):
            dup = int(tokens[1:][steps == 0][0])
            raise ValueError(f"cost table: duplicate size tokens={dup}")
        if np.any(steps < 0):
            bad = int(np.argmax(steps < 0)) + 1
            raise ValueError(
                f"cost table: sizes not sorted (tokens={int(tokens[bad])} after {int(tokens[bad - 1])})"
            )
        if not np.all(np.isfinite(seconds)) or np.any(seconds <= 0):
            bad = int(np.argmax(~(np.isfinite(seconds) & (seconds > 0))))
            raise ValueError(
                f"cost table: latency must be a positive number, got seconds={seconds[bad]!r} "
                f"at tokens={int(tokens[bad])}"
            )
        if self.mode not in ("step", "linear"):
            raise ValueError(f"cost table: mode must be 'step' or 'linear', got {self.mode!r}")
        if not (math.isfinite(self.draft_seconds) and self.draft_seconds >= 0):
            raise ValueError(f"cost table: draft_seconds must be ≥ 0, got {self.draft_seconds!r}")
        if not (math.isfinite(self.request_seconds) and self.request_seconds >= 0):
            raise ValueError(f"cost table: request_seconds must be ≥ 0, got {self.request_seconds!r}")
        if not (math.isfinite(self.kv_token_seconds) and self.kv_token_seconds >= 0):
            raise ValueError(f"cost table: kv_token_seconds must be ≥ 0, got {self.kv_token_seconds!r}")
        if not (math.isfinite(self.attn_pair_seconds) and self.attn_pair_seconds >= 0):
            raise ValueError(f"cost table: attn_pair_seconds must be ≥ 0, got {self.attn_pair_seconds!r}")
        if int(self.layers) != self.layers or self.layers < 1:
            raise ValueError(f"cost table: layers must be a positive integer, got {self.layers!r}")
        tokens.setflags(write=False)
        seconds = seconds.copy()
        seconds.setflags(write=False)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "draft_seconds", float(self.draft_seconds))
        object.__setattr__(self, "layers", int(self.layers))
        object.__setattr__(self, "request_seconds", float(self.request_seconds))
        object.__setattr__(self, "kv_token_seconds", float(self.kv_token_seconds))
        object.__setattr__(self, "attn_pair_seconds", float(self.attn_pair_seconds))
        dense = self._evaluate(np.arange(max(_DENSE_MIN, 2 * int(tokens[-1])) + 1, dtype=np.int64))
        dense.setflags(write=False)
        object.__setattr__(self, "_dense", dense)

    # -- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_points(
        cls,
        tokens,
        seconds,
        *,
        mode: Mode = "step",
        draft_seconds: float = 0.0,
        layers: int = 1,
        name: str = "",
        request_seconds: float = 0.0,
        kv_token_seconds: float = 0.0,
        attn_pair_seconds: float = 0.0,
    ) -> CostTable:
        """A table from measured (tokens, seconds) points, sorted by tokens."""
        secs = np.asarray(seconds, dtype=np.float64)
        return cls(
            np.asarray(tokens),
            secs,
            mode,
            draft_seconds,
            layers,
            name,
            request_seconds,
            kv_token_seconds,
            attn_pair_seconds,
        )

    @classmethod
    def from_csv(
        cls, path: str | Path, *, mode: Mode = "step", layers: int = 1, key: str = "tokens"
    ) -> CostTable:
        """Read a `tokens,seconds` CSV (header required; blank lines and `#` comments skipped). `key` names
        the size column (e.g. "requests" for a draft cost indexed by requests).

        An optional `context_tokens` column (KV tokens the step's requests held) makes the table
        context-aware: sizes may repeat at different contexts, and `kv_token_seconds` is the least-squares
        slope of seconds on context shared by all sizes (each size keeps its own intercept, its latency).
        Without it the term is 0.

        Raises `InputError` naming the file, the line and the field for a missing file, a wrong header, a
        non-numeric or non-positive value, or unsorted/duplicate sizes.
        """
        path = Path(path)
        text = inputs.read_text(path, what="cost table", limit=inputs.LIMITS["table"])  # regular, capped
        with inputs.reading(path):
            return cls._parse_csv(path, text, mode, layers, key)

    @classmethod
    def _parse_csv(cls, path: Path, text: str, mode: Mode, layers: int, key: str) -> CostTable:
        rows = [
            (i, line)
            for i, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not rows:
            raise InputError("empty cost table (expected header 'tokens,seconds')", file=str(path))
        header_line, header = rows[0]
        names = [h.strip() for h in next(csv.reader([header]))]
        inputs.unique_columns(names, str(path), header_line)
        if key not in names or "seconds" not in names:
            raise InputError(
                f"header must have columns '{key},seconds', got {','.join(names)!r}",
                file=str(path),
                line=header_line,
            )
        has_ctx = "context_tokens" in names
        tokens: list[int] = []
        seconds: list[float] = []
        context: list[float] = []
        for lineno, line in rows[1:]:
            cells = next(csv.reader([line]))
            if len(cells) != len(names):
                raise InputError(
                    f"expected {len(names)} columns, got {len(cells)}", file=str(path), line=lineno
                )
            row = dict(zip(names, cells))
            t = _cell(row, key, path, lineno, whole=True)
            s = _cell(row, "seconds", path, lineno)
            if tokens and (t < tokens[-1] or (t == tokens[-1] and not has_ctx)):
                what = "duplicate size" if t == tokens[-1] else f"sizes not sorted ({t} after {tokens[-1]})"
                raise InputError(what, file=str(path), line=lineno, field=key)
            tokens.append(int(t))
            seconds.append(s)
            context.append(_cell(row, "context_tokens", path, lineno, zero=True) if has_ctx else 0.0)
        if not tokens:
            raise InputError("cost table has a header but no rows", file=str(path))
        per_kv = 0.0
        if has_ctx:
            tokens, seconds, per_kv = _context_slope(tokens, context, seconds, path)
        _warn_if_cheaper(tokens, seconds, path, key)
        return cls.from_points(
            tokens, seconds, mode=mode, layers=layers, name=path.stem, kv_token_seconds=per_kv
        )

    @classmethod
    def roofline(
        cls,
        model: str | ModelShape,
        gpu: str | GPU,
        *,
        tp: int = 1,
        name: str | None = None,
        **knobs,
    ) -> CostTable:
        """A table synthesized from a roofline when no profile exists (`price.roofline.step_seconds`).

        The KV-cache reads of attention do not scale with B: with a number `context_tokens` (default 1024)
        each request is charged that fixed context in `request_seconds`; with `context_tokens=None` the
        table is context-aware (`kv_token_seconds`, the simulator charges each step its requests' actual
        context). `knobs` are the roofline's parallelism, efficiency and workload assumptions (ep, eta_bw,
        eta_f, c0, context_tokens, link_bw, link_latency, hop_latency, request_s, bytes_per_param); every
        one is documented there.
        Evaluated at every integer B in 1..8192 ("linear" mode); beyond that the compute-bound regime is
        linear, which is exactly what the table extrapolates.
        """
        shape = get_model(model)
        dev = get_gpu(gpu)
        b = np.arange(1, 8193, dtype=np.float64)
        secs = roofline.step_seconds(shape, dev, b, tp=tp, **knobs)
        per_request = roofline.request_seconds(shape, dev, tp=tp, **knobs)
        per_kv = 0.0
        if "context_tokens" in knobs and knobs["context_tokens"] is None:
            per_kv = roofline.kv_token_seconds(shape, dev, tp=tp, **knobs)
        label = name or f"roofline:{shape.name}@{dev.name}x{tp}"
        return cls.from_points(
            b.astype(np.int64),
            secs,
            mode="linear",
            layers=shape.layers,
            name=label,
            request_seconds=per_request,
            kv_token_seconds=per_kv,
        )

    def with_draft(self, seconds: float) -> CostTable:
        """This table with another per-step draft cost (cheap: shares the arrays, skips re-validation)."""
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"draft_seconds must be ≥ 0, got {seconds!r}")
        new = object.__new__(CostTable)
        for f in (
            "tokens",
            "seconds",
            "mode",
            "layers",
            "name",
            "request_seconds",
            "kv_token_seconds",
            "attn_pair_seconds",
            "_dense",
        ):
            object.__setattr__(new, f, getattr(self, f))
        object.__setattr__(new, "draft_seconds", float(seconds))
        return new

    def renamed(self, name: str) -> CostTable:
        return replace(self, name=name)

    # -- evaluation --------------------------------------------------------------------------------------

    def _evaluate(self, b: np.ndarray) -> np.ndarray:
        t, s = self.tokens, self.seconds
        bf = b.astype(np.float64)
        if self.mode == "step":
            idx = np.minimum(np.searchsorted(t, b, side="left"), t.size - 1)
            out = s[idx].copy()
        else:
            out = np.interp(bf, t.astype(np.float64), s)
        beyond = b > t[-1]
        if np.any(beyond):
            slope = 0.0 if t.size == 1 else max(0.0, (s[-1] - s[-2]) / (t[-1] - t[-2]))
            out[beyond] = s[-1] + slope * (bf[beyond] - t[-1])
        return out

    def latency(self, b):
        """Seconds of one verify forward at `b` total tokens (int or int array, ≥ 0); excludes drafting."""
        arr = np.asarray(b)
        scalar = arr.ndim == 0
        arr = np.atleast_1d(arr).astype(np.int64)
        if arr.size and int(arr.max()) < self._dense.size and int(arr.min()) >= 0:
            out = self._dense[arr]
        else:
            out = self._evaluate(np.maximum(arr, 0))
        return float(out[0]) if scalar else out

    def latency_range(self, lo: int, hi: int) -> np.ndarray:
        """float64[hi − lo + 1]: latency(B) for B = lo..hi (the policies' hot path)."""
        if 0 <= lo and hi < self._dense.size:
            return self._dense[lo : hi + 1]
        return self._evaluate(np.arange(lo, hi + 1, dtype=np.int64))

    def step_seconds(self, b, requests: int = 0, context: float = 0.0):
        """Wall time of a whole engine step over `requests` running requests holding `context` KV tokens in
        all and `b` tokens (seconds): draft_seconds + request_seconds·requests + kv_token_seconds·context +
        latency(b)."""
        fixed = self.draft_seconds + self.request_seconds * requests + self.kv_token_seconds * context
        return fixed + self.latency(b)

    def sps(self, b, requests: int = 0):
        """Engine steps per second: 1 / step_seconds(b, requests)."""
        return 1.0 / self.step_seconds(b, requests)

    def layer_seconds(self, b):
        """One target-sized layer over `b` tokens (seconds), to price draft-model layers."""
        return self.latency(b) / self.layers

    def to_csv(self, path: str | Path) -> None:
        """Write the measured points as `tokens,seconds` (what `from_csv` reads)."""
        lines = ["tokens,seconds"] + [f"{int(t)},{float(s)!r}" for t, s in zip(self.tokens, self.seconds)]
        safeio.write_text(path, "\n".join(lines) + "\n")  # atomic: a full disk keeps the old file

    def __repr__(self) -> str:
        return (
            f"CostTable(name={self.name!r}, points={self.tokens.size}, mode={self.mode!r}, "
            f"B={int(self.tokens[0])}..{int(self.tokens[-1])}, draft_seconds={self.draft_seconds:g})"
        )


def _cell(row: dict, name: str, path: Path, lineno: int, *, whole: bool = False, zero: bool = False):
    """One numeric cell of a cost-table CSV: > 0 (≥ 0 with `zero`), a whole number ≥ 1 with `whole`."""
    raw = row[name]
    val = inputs.number(raw, file=str(path), line=lineno, field=name)  # finite, ≤ 64 characters
    if whole and val.is_integer() and val > MAX_TOKENS:
        raise InputError(
            f"must be ≤ {MAX_TOKENS} (the largest batch a table may list), got {raw!r}",
            file=str(path),
            line=lineno,
            field=name,
        )
    if whole and (not val.is_integer() or val < 1):
        raise InputError(f"must be a whole number ≥ 1, got {raw!r}", file=str(path), line=lineno, field=name)
    if not (math.isfinite(val) and (val >= 0 if zero else val > 0)):
        what = "latency" if name == "seconds" else "value"
        need = "≥ 0" if zero else "> 0"
        raise InputError(f"{what} must be {need}, got {raw!r}", file=str(path), line=lineno, field=name)
    if name == "seconds" and not MIN_STEP_S <= val <= MAX_STEP_S:  # 1e-300 or 1e300 s is no GPU step
        raise InputError(
            f"a step time must be within [{MIN_STEP_S:g}, {MAX_STEP_S:g}] s, got {raw!r}",
            file=str(path),
            line=lineno,
            field=name,
        )
    return int(val) if whole else val


def _warn_if_cheaper(tokens, seconds, path: Path, key: str) -> None:
    """A step that costs 10 % less than a smaller one is legal (kernel choice) but surprising: warn."""
    peak = 0.0
    for t, sec in zip(tokens, seconds):
        if sec < 0.9 * peak:
            inputs.warn(
                f"gets cheaper with size ({key}={int(t)} takes {sec:.4g} s, a smaller one {peak:.4g} s)",
                file=str(path),
            )
            return
        peak = max(peak, float(sec))


def _context_slope(tokens: list[int], context: list[float], seconds: list[float], path: Path):
    """Split context-tagged points into per-size latencies (at zero context) and one shared seconds-per-KV-
    token slope: least squares with an intercept per size. Returns (sizes, latencies, slope)."""
    t, c, s = np.asarray(tokens), np.asarray(context), np.asarray(seconds)
    sizes, group = np.unique(t, return_inverse=True)
    c_mean = np.bincount(group, c) / np.bincount(group)
    s_mean = np.bincount(group, s) / np.bincount(group)
    dc = c - c_mean[group]
    denom = float(np.sum(dc * dc))
    slope = max(0.0, float(np.sum(dc * (s - s_mean[group]))) / denom) if denom > 0 else 0.0
    lat = s_mean - slope * c_mean
    if np.any(lat <= 0):
        bad = int(sizes[np.argmax(lat <= 0)])
        raise InputError(
            f"the context slope ({slope:.3g} s per KV token) leaves no positive latency at size {bad}",
            file=str(path),
            field="context_tokens",
        )
    return sizes.tolist(), lat.tolist(), slope

"""A per-step timeline of a simulator run in Chrome Trace Event format (opens in Perfetto / chrome://tracing).

Role: the observer `specbed run --timeline` hands the server (`Deployment.observer`). Every engine
step of every replica becomes one complete event, and the replica's queue length and KV use become
counter tracks:

    {"traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "replica 0"}},  # once per replica
      {"ph": "X", "name": "step", "cat": "engine", "pid": REPLICA, "tid": 0, "ts": START_US, "dur": DUR_US,
       "args": {"requests": R, "verify_tokens": B_verify, "prefill_tokens": B_prefill,
                "drafted": R·γ, "verified_drafts": Σ ℓ, "accepted": Σ accepted, "emitted": tokens,
                "cost_us": {"draft": US, "fixed": US, ...}}},  # the step's bill by part (PARTS)
      {"ph": "C", "name": "queue", "pid": REPLICA, "ts": END_US, "args": {"waiting": N}},
      {"ph": "C", "name": "kv", "pid": REPLICA, "ts": END_US, "args": {"kv_tokens": N}},
      ...],
     "displayTimeUnit": "ms", "otherData": {...}}

`ts`/`dur` are simulated microseconds (Trace Event's unit), and so is `cost_us`, the step's
`specsched.stepcost.StepBill` by part (where its time goes: the parts add up to `dur` within rounding);
`pid` is the replica index, so Perfetto shows one process per replica. So a run's file holds exactly
`summary["steps"]` "X" events.

Memory is bounded: steps are buffered as numbers and flushed (formatted in one pass) to the open file
every `flush_every` steps; the writer never holds the run's events. The file is written under a
temporary name and renamed by `close()` (`abort()` removes it), so a failed run leaves no half-written
timeline.

May import: numpy, the standard library, `specsched.stepcost` (PARTS).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from specsched.io.results import dumps_json
from specsched.stepcost import PARTS

#: one step as text: its complete event and its two counter events (filled by `%` from a row)
_STEP = (
    '{"ph":"X","name":"step","cat":"engine","pid":%d,"tid":0,"ts":%.3f,"dur":%.3f,"args":{"requests":%d,'
    '"verify_tokens":%d,"prefill_tokens":%d,"drafted":%d,"verified_drafts":%d,"accepted":%d,"emitted":%d,'
    '"cost_us":{' + ",".join(f'"{name}":%.3f' for name in PARTS) + "}}},\n"
    '{"ph":"C","name":"queue","pid":%d,"ts":%.3f,"args":{"waiting":%d}},\n'
    '{"ph":"C","name":"kv","pid":%d,"ts":%.3f,"args":{"kv_tokens":%d}}'
)


_NO_BILL = (0.0,) * len(PARTS)  # a step observed without its bill


class TimelineWriter:
    """Streams a run's steps to `path` (Chrome Trace Event JSON); call as the server's step observer.

    gamma: drafts per request per step (for `drafted`); meta: JSON-ready dict written as "otherData".
    The per-step call only appends the step's numbers (and its accepted array) to a buffer; every
    `flush_every` steps the buffer is summed and formatted in one pass and written: the run pays a few
    microseconds a step, and memory holds at most one buffer.
    """

    def __init__(self, path: str | Path, *, gamma: int, meta: dict | None = None, flush_every: int = 4096):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        self.gamma = int(gamma)
        self.meta = dict(meta or {})
        self.flush_every = flush_every
        self.events = 0  # "X" events written (= engine steps)
        self._rows: list[tuple] = []
        self._accepted: list[np.ndarray] = []
        self._parts: list[tuple] = []  # each step's bill by part (seconds)
        self._seen: set[int] = set()
        self._handle = open(self.tmp, "w")  # held open for the run: closed by close() / abort()
        self._handle.write('{"traceEvents":[\n')
        self._first = True

    def __call__(
        self,
        replica,
        start: float,
        seconds: float,
        requests: int,
        verify: int,
        prefill: int,
        lengths: np.ndarray,
        accepted: np.ndarray,
        emitted: int,
        bill=None,
    ) -> None:
        self._parts.append(bill[: len(PARTS)] if bill is not None else _NO_BILL)
        self._rows.append(
            (
                replica.index,
                start,
                seconds,
                requests,
                verify,
                prefill,
                emitted,
                len(replica.queue),
                replica.kv_used,
            )
        )
        self._accepted.append(accepted)
        if len(self._rows) >= self.flush_every:
            self._flush()

    def _flush(self) -> None:
        rows = self._rows
        if not rows:
            return
        cols = np.array(rows, dtype=np.float64).T
        pid, start, seconds = cols[0], cols[1], cols[2]
        # Round both ends (ns precision) so a step ends exactly where the replica's next one starts:
        # Perfetto nests slices that overlap by even a nanosecond.
        ts = np.round(start * 1e6, 3)
        end = np.round((start + seconds) * 1e6, 3)
        sizes = np.fromiter((a.size for a in self._accepted), dtype=np.int64, count=len(rows))
        flat = np.concatenate(self._accepted) if sizes.sum() else np.zeros(0, dtype=np.int64)
        cum = np.concatenate([[0], np.cumsum(flat)])
        edges = np.concatenate([[0], np.cumsum(sizes)])
        accepted = cum[edges[1:]] - cum[edges[:-1]]
        out = []
        new = [int(p) for p in np.unique(pid) if int(p) not in self._seen]
        for p in new:
            self._seen.add(p)
            out.append(f'{{"ph":"M","name":"process_name","pid":{p},"args":{{"name":"replica {p}"}}}}')
        ints = cols.astype(np.int64)  # pid, -, -, requests, verify, prefill, emitted, queue, kv
        p, r, v, pf, em, q, kv = (ints[i].tolist() for i in (0, 3, 4, 5, 6, 7, 8))
        drafted = (ints[3] * self.gamma).tolist()
        verified = (ints[4] - ints[3]).tolist()  # verify tokens = requests + Σ ℓ
        t, d, e, a = ts.tolist(), (end - ts).tolist(), end.tolist(), accepted.tolist()
        parts = (np.array(self._parts, dtype=np.float64).reshape(len(rows), len(PARTS)) * 1e6).tolist()
        fields = zip(p, t, d, r, v, pf, drafted, verified, a, em, parts, e, q, kv)
        out.extend(
            _STEP % (p_, t_, d_, r_, v_, f_, g_, h_, a_, m_, *c_, p_, e_, q_, p_, e_, k_)
            for p_, t_, d_, r_, v_, f_, g_, h_, a_, m_, c_, e_, q_, k_ in fields
        )
        text = ",\n".join(out)
        self._handle.write(text if self._first else ",\n" + text)
        self._first = False
        self.events += len(rows)
        rows.clear()
        self._accepted.clear()
        self._parts.clear()

    def close(self) -> Path:
        """Finish the JSON document and move it to `path`; returns `path`."""
        self._flush()
        meta = dumps_json({**self.meta, "steps": self.events}, indent=None).rstrip("\n")
        self._handle.write(f'\n],"displayTimeUnit":"ms","otherData":{meta}}}\n')
        self._handle.close()
        os.replace(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the partial file (a failed run)."""
        if not self._handle.closed:
            self._handle.close()
        if self.tmp.exists():
            self.tmp.unlink()

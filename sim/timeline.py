"""A per-step timeline of a simulator run in Chrome Trace Event format (opens in Perfetto / chrome://tracing).

Role: the observer `specbed run --timeline` hands the server (`sim.server.Engine.observer`). Every engine
step of every replica becomes one complete event, and the replica's queue length and KV use become
counter tracks:

    {"traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "replica 0"}},  # once per replica
      {"ph": "X", "name": "step", "cat": "engine", "pid": REPLICA, "tid": 0, "ts": START_US, "dur": DUR_US,
       "args": {"requests": R, "verify_tokens": B_verify, "prefill_tokens": B_prefill,
                "drafted": R·γ, "verified_drafts": Σ ℓ, "accepted": Σ accepted, "emitted": tokens}},
      {"ph": "C", "name": "queue", "pid": REPLICA, "ts": END_US, "args": {"waiting": N}},
      {"ph": "C", "name": "kv", "pid": REPLICA, "ts": END_US, "args": {"kv_tokens": N}},
      ...],
     "displayTimeUnit": "ms", "otherData": {...}}

`ts`/`dur` are simulated microseconds (Trace Event's unit); `pid` is the replica index, so Perfetto
shows one process per replica. So a run's file holds exactly `summary["steps"]` "X" events.

Memory is bounded: events are formatted as text and flushed to the open file every `flush_every`
steps; the writer never holds the run's events. The file is written under a temporary name and renamed
by `close()` (`abort()` removes it), so a failed run leaves no half-written timeline.

May import: numpy, the standard library.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np


class TimelineWriter:
    """Streams a run's steps to `path` (Chrome Trace Event JSON); call as the server's step observer.

    gamma: drafts per request per step (for `drafted`); meta: JSON-ready dict written as "otherData".
    """

    def __init__(self, path: str | Path, *, gamma: int, meta: dict | None = None, flush_every: int = 4096):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        self.gamma = int(gamma)
        self.meta = dict(meta or {})
        self.flush_every = flush_every
        self.events = 0  # "X" events written (= engine steps)
        self._buf: list[str] = []
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
    ) -> None:
        pid = replica.index
        buf = self._buf
        if pid not in self._seen:
            self._seen.add(pid)
            buf.append(f'{{"ph":"M","name":"process_name","pid":{pid},"args":{{"name":"replica {pid}"}}}}')
        # Round both ends (ns precision) so a step ends exactly where the replica's next one starts:
        # Perfetto nests slices that overlap by even a nanosecond.
        ts = round(start * 1e6, 3)
        end = round((start + seconds) * 1e6, 3)
        buf.append(
            f'{{"ph":"X","name":"step","cat":"engine","pid":{pid},"tid":0,"ts":{ts:.3f},'
            f'"dur":{end - ts:.3f},"args":{{"requests":{requests},"verify_tokens":{verify},'
            f'"prefill_tokens":{prefill},"drafted":{requests * self.gamma},'
            f'"verified_drafts":{int(lengths.sum()) if requests else 0},'
            f'"accepted":{int(accepted.sum()) if requests else 0},"emitted":{emitted}}}}}'
        )
        buf.append(
            f'{{"ph":"C","name":"queue","pid":{pid},"ts":{end:.3f},"args":{{"waiting":{len(replica.queue)}}}}}'
        )
        buf.append(
            f'{{"ph":"C","name":"kv","pid":{pid},"ts":{end:.3f},"args":{{"kv_tokens":{replica.kv_used}}}}}'
        )
        self.events += 1
        if self.events % self.flush_every == 0:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        text = ",\n".join(self._buf)
        self._handle.write(text if self._first else ",\n" + text)
        self._first = False
        self._buf.clear()

    def close(self) -> Path:
        """Finish the JSON document and move it to `path`; returns `path`."""
        self._flush()
        meta = json.dumps({**self.meta, "steps": self.events}, sort_keys=True, allow_nan=False)
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

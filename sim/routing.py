"""Routers and arrival processes: which replica gets each request, and when requests are submitted.

Role: `Router` sends each arriving request to a replica (consulted once per arrival, synchronously; ties
between replicas go to the lowest index): "round_robin" (in submission order), "least_outstanding"
(fewest queued + running), "random" (uniform, from the run's own "router" stream) or "session" (a hash
of the session key: the user in closed loop, else the trace's session id, else the request id).
The routers in `STATE_FREE` never read replica state, so an open-loop run can be routed before it starts
(`route_up_front`) and each replica fed on its own (`OpenLoop` with `rids`): replicas then never
interact, which is what lets `sim.shard` simulate them in separate processes. `OpenLoop` submits
requests at their arrival times and tells the replicas when the next one comes (`horizon`, read by the
multi-step decode path of `sim.steps`); `ClosedLoop` keeps `users` requests in flight with think times
(a benchmark client at fixed concurrency; optionally paced by earliest send times).

May import: numpy, simpy, the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy

#: routers that never read replica state: an open-loop run with one is routed up front and can be sharded
STATE_FREE = ("round_robin", "random", "session")


def session_replica(keys: np.ndarray, replicas: int) -> np.ndarray:
    """int64[N] replica of each session key (int64[N], any values): the splitmix64 finalizer of the key
    modulo `replicas` — fixed across runs, processes and machines (unlike Python's `hash`)."""
    z = np.asarray(keys, dtype=np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z % np.uint64(replicas)).astype(np.int64)


def route_up_front(
    kind: str, replicas: int, n: int, rng: np.random.Generator, session: np.ndarray | None = None
) -> np.ndarray:
    """int64[n]: the replica of each open-loop request id (ids are in arrival order), for a router in
    `STATE_FREE`. session: int64[n] session ids (−1 = unknown: the request id stands in), or None."""
    ids = np.arange(n, dtype=np.int64)
    if kind == "round_robin":
        return ids % replicas
    if kind == "random":
        return rng.integers(0, replicas, size=n, dtype=np.int64)
    if kind == "session":
        keys = ids if session is None else np.where(session >= 0, session, ids)
        return session_replica(keys, replicas)
    raise ValueError(f"router {kind!r} reads replica state: it cannot route up front")


class Router:
    """Sends each arriving request to a replica as it arrives (see the module doc; ties: lowest index).

    rng: the "router" stream ("random" draws from it per submission).
    """

    def __init__(self, replicas: list, kind: str, rng: np.random.Generator | None = None) -> None:
        self.replicas = replicas
        self.kind = kind
        self.rng = rng
        self._next = 0

    def submit(self, rid: int, key: int | None = None) -> None:
        """Route request `rid`; key: its session key ("session"; None: the request id)."""
        kind = self.kind
        if kind == "round_robin":
            target = self.replicas[self._next]
            self._next = (self._next + 1) % len(self.replicas)
        elif kind == "random":
            target = self.replicas[int(self.rng.integers(len(self.replicas)))]
        elif kind == "session":
            k = rid if key is None else key
            target = self.replicas[int(session_replica(np.array([k]), len(self.replicas))[0])]
        else:
            target = min(self.replicas, key=lambda rep: (rep.outstanding, rep.index))
        target.enqueue(rid)


class OpenLoop:
    """simpy process submitting each request of `rids` (default: all, ids in arrival order) at
    arrival_s[rid] through `submit`; `horizon()` is the time of the next arrival not yet submitted (inf
    when none is left): what `Deployment.horizon` (or a fed replica's own `horizon`) reads."""

    def __init__(
        self,
        env: simpy.Environment,
        submit: Callable[[int], None],
        arrival_s: np.ndarray,
        rids: np.ndarray | None = None,
    ) -> None:
        self.env, self.submit = env, submit
        self.rids = list(range(arrival_s.size)) if rids is None else rids.tolist()
        self.times = arrival_s.tolist() if rids is None else arrival_s[rids].tolist()
        self.next = 0
        env.process(self._run())

    def horizon(self) -> float:
        return self.times[self.next] if self.next < len(self.times) else math.inf

    def _run(self):
        env, submit = self.env, self.submit
        for i, (rid, t) in enumerate(zip(self.rids, self.times)):
            if t > env.now:
                yield env.timeout(t - env.now)
            self.next = i + 1
            submit(rid)


class ClosedLoop:
    """`users` users; each submits a request at t = 0, and after each completion thinks think_s[next id]
    seconds and submits the next unissued request id, until all N are issued. The user of the request that
    completed issues it (`user[rid]`, what the "session" router hashes).

    This is what the benchmark clients do at a fixed concurrency (`vllm bench serve --max-concurrency N`,
    inference-perf's and genai-perf's concurrency modes): N requests in flight from t = 0, the next in
    dataset order sent the instant one completes (think 0). No cohort is imposed: requests keep the
    stagger chunked prefill and their own output lengths give them (docs/memory.md "Closed-loop clients").

    not_before: float64[N] earliest send time of each request (seconds), or None: a client that paces
    requests at a rate and caps those in flight (`--request-rate R --max-concurrency N`) sends request i
    at the later of its paced time and the moment a slot frees.
    """

    def __init__(
        self,
        env: simpy.Environment,
        router: Router,
        users: int,
        think_s: np.ndarray,
        not_before: np.ndarray | None = None,
    ) -> None:
        self.env, self.router, self.think_s = env, router, think_s
        self.not_before = None if not_before is None or not np.any(not_before > 0) else not_before.tolist()
        self.issued = 0
        self.total = think_s.size
        self.user = np.full(self.total, -1, dtype=np.int64)  # who issued each request (the session key)
        for u in range(min(users, self.total)):
            self._issue(0.0, u)

    def _issue(self, think: float, user: int) -> None:
        rid = self.issued
        self.issued += 1
        self.user[rid] = user
        if self.not_before is not None:  # paced: wait for its send time too
            think = max(think, self.not_before[rid] - self.env.now)
        if think > 0.0:
            ev = self.env.timeout(think)
            ev.callbacks.append(lambda _ev: self.router.submit(rid, user))
        else:
            self.router.submit(rid, user)

    def on_complete(self, rids: np.ndarray, now: float) -> None:
        for done in rids.tolist():
            if self.issued < self.total:
                self._issue(float(self.think_s[self.issued]), int(self.user[done]))

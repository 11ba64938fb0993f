"""Routers and arrival processes: which replica gets each request, and when requests are submitted.

Role: `Router` sends each arriving request to a replica (consulted once per arrival, synchronously; ties
between replicas go to the lowest index): "round_robin" (in submission order) or "least_outstanding"
(fewest queued + running). `OpenLoop` submits a trace's requests at their arrival times and tells the
replicas when the next one comes (`horizon`, read by the multi-step decode path of `sim.steps`);
`ClosedLoop` keeps `users` requests in flight with think times.

May import: numpy, simpy, the standard library.
"""

from __future__ import annotations

import math

import numpy as np
import simpy


class Router:
    """Sends each arriving request to a replica: "round_robin" or "least_outstanding" (ties: lowest index)."""

    def __init__(self, replicas: list, kind: str) -> None:
        self.replicas = replicas
        self.kind = kind
        self._next = 0

    def submit(self, rid: int) -> None:
        if self.kind == "round_robin":
            target = self.replicas[self._next]
            self._next = (self._next + 1) % len(self.replicas)
        else:
            target = min(self.replicas, key=lambda rep: (rep.outstanding, rep.index))
        target.enqueue(rid)


class OpenLoop:
    """simpy process submitting request i at arrival_s[i] (ids in arrival order); `horizon()` is the time
    of the next arrival not yet submitted (inf when none is left): what `Deployment.horizon` reads."""

    def __init__(self, env: simpy.Environment, router: Router, arrival_s: np.ndarray) -> None:
        self.env, self.router = env, router
        self.times = arrival_s.tolist()
        self.next = 0
        env.process(self._run())

    def horizon(self) -> float:
        return self.times[self.next] if self.next < len(self.times) else math.inf

    def _run(self):
        env = self.env
        for rid, t in enumerate(self.times):
            if t > env.now:
                yield env.timeout(t - env.now)
            self.next = rid + 1
            self.router.submit(rid)


class ClosedLoop:
    """`users` users; each submits a request at t = 0, and after each completion thinks think_s[next id]
    seconds and submits the next unissued request id, until all N are issued."""

    def __init__(self, env: simpy.Environment, router: Router, users: int, think_s: np.ndarray) -> None:
        self.env, self.router, self.think_s = env, router, think_s
        self.issued = 0
        self.total = think_s.size
        for _ in range(min(users, self.total)):
            self._issue(0.0)

    def _issue(self, think: float) -> None:
        rid = self.issued
        self.issued += 1
        if think > 0.0:
            ev = self.env.timeout(think)
            ev.callbacks.append(lambda _ev: self.router.submit(rid))
        else:
            self.router.submit(rid)

    def on_complete(self, rids: np.ndarray, now: float) -> None:
        for _ in range(rids.size):
            if self.issued < self.total:
                self._issue(float(self.think_s[self.issued]))

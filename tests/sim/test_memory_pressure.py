"""KV pressure and closed-loop clients (issue 33 item 5, memory side; docs/memory.md).

vLLM v1's rules the simulator follows: a preempted request (the newest running one) frees its blocks as
cached blocks and resumes from those nothing has reused; a benchmark client at fixed concurrency keeps N
requests in flight, sends the next the instant one completes, and (paced) never before its own time.
"""

from __future__ import annotations

import numpy as np

from sim.deploy.prepare import closed_loop, prepare
from sim.metrics import request_table
from sim.prefix_cache import PrefixCache, own_keys, request_keys
from sim.wiring import run_pool
from sim.workload import Workload
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec

KNOBS = shipped_knobs("h100")


def _wl(n: int, inp: int, out, arrival=None) -> Workload:
    outs = np.full(n, out, dtype=np.int64) if np.isscalar(out) else np.asarray(out, dtype=np.int64)
    arr = np.zeros(n) if arrival is None else np.asarray(arrival, dtype=np.float64)
    return Workload(arr, np.full(n, inp, dtype=np.int64), outs, np.zeros(n, dtype=np.int64), None, 0)


def _run(spec: VllmSpec, wl: Workload, concurrency=None):
    """(recorder, request table, per-step (start, running, prefill tokens))."""
    steps = []

    def observe(rep, start, seconds, r, verify, prefill, lengths, accepted, emitted, bill):
        steps.append((start, rep.n, prefill))

    prep = prepare(spec, KNOBS, wl, None, concurrency=concurrency)
    rec = run_pool(prep, observer=observe)
    return rec, request_table(rec, wl), np.array(steps)


def test_own_keys_are_distinct_and_extend_past_the_prompt():
    keys = own_keys(np.array([40, 40]), 16)
    assert len(keys[0]) == 40 // 16 and not set(keys[0]) & set(keys[1])
    listed = request_keys([11, 12], rid=3, n=4)  # a shared prompt's keys, then its own output blocks
    assert listed[:2] == [11, 12] and len(set(listed)) == 4
    assert request_keys(listed, 3, 4) == listed and list(request_keys(keys[0], 0, 2)) == list(keys[0][:2])


def test_closed_loop_keeps_n_in_flight_and_times_from_the_send():
    spec = VllmSpec(model="llama3.1-8b", max_num_seqs=64)
    wl = _wl(24, 512, 64)
    rec, req, _ = _run(spec, wl, concurrency=4)
    sent, done = rec.arrival_s, rec.finish_s
    in_flight = [int(np.sum((sent <= t) & (done > t))) for t in np.unique(sent)]
    assert max(in_flight) == 4 and np.all(sent[:4] == 0.0)
    # request i + 4 is sent when one of the first requests completes, not at t = 0: its TTFT is the
    # server's, not the client's wait (what vllm bench serve times)
    assert np.all(sent[4:] > 0) and req["ttft_s"].max() < 0.2


def test_a_paced_client_sends_no_earlier_than_its_time():
    spec = VllmSpec(model="llama3.1-8b")
    arrival = np.arange(12) * 0.5  # --request-rate 2 with --max-concurrency 2
    rec, _, _ = _run(spec, _wl(12, 256, 32, arrival), concurrency=2)
    assert np.all(rec.arrival_s >= arrival - 1e-12)
    assert closed_loop(_wl(3, 8, 8)).arrival_s is None  # all at 0: unpaced


def test_identical_requests_are_not_one_cohort():
    """All N start at t = 0 as the client starts them, but chunked prefill staggers their first tokens,
    so completions (and the next sends) spread out instead of recurring as one batch."""
    spec = VllmSpec(model="llama3.1-8b", max_num_batched_tokens=2048)
    rec, _, _ = _run(spec, _wl(64, 1024, 128), concurrency=16)
    second_wave = np.sort(rec.arrival_s)[16:32]
    assert np.unique(np.round(second_wave, 6)).size >= 8


def test_preempted_requests_resume_from_their_own_blocks():
    """KV for about 25 of 32 requests of mixed output lengths: the newest are preempted as the others
    grow. With prefix caching (vLLM's default) a resumed request finds what is left of its own blocks and
    recomputes less than without; the same preemptions either way (caching saves compute, not memory: a
    resumed request needs all its blocks free, cached or new, as vLLM's allocate_slots counts them)."""
    outs = np.random.default_rng(0).integers(100, 600, size=96)
    recomputed, preempted = {}, {}
    for caching in (True, False):
        spec = VllmSpec(model="llama3.1-8b", kv_tokens=30_000, prefix_caching=caching, max_num_seqs=64)
        wl = _wl(96, 1000, outs)
        rec, _, steps = _run(spec, wl, concurrency=32)
        recomputed[caching] = steps[:, 2].sum() - wl.input_tokens.sum()
        preempted[caching] = int(rec.preemptions.sum())
    assert preempted[True] == preempted[False] > 0
    assert recomputed[True] < recomputed[False] <= preempted[False] * (1000 + 600)


def test_cache_holds_only_free_blocks():
    cache = PrefixCache(4, 16)
    cache.insert(reversed(range(10)))  # a preempted request's 10 blocks, tail first
    assert len(cache) == 4 and cache.peek(range(10)) == 4  # its head survives: the tail goes first

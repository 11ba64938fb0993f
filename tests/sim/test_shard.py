"""Sharded runs (`sim.shard`, `specbed run --backend ray`): state-free routers, order-independent totals,
identical results on a local Ray instance, and bad --backend/--address as one line with exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
import simpy

from sim.recorder import LogHistogram, TimeBins
from sim.routing import STATE_FREE, ClosedLoop, Router, route_up_front, session_replica
from sim.run import prepare
from sim.shard import groups, run_shard, shard_reason
from sim.wiring import run_pool
from specbed.cli import main as specbed
from tests.sim.simutil import config

TINY = ("workload.num_requests=240", "workload.rate=60", "server.replicas=3", "metrics.series_bins=40")


def test_state_free_routers_route_up_front():
    rng = np.random.default_rng(0)
    assert route_up_front("round_robin", 3, 7, rng).tolist() == [0, 1, 2, 0, 1, 2, 0]
    a = route_up_front("random", 4, 1000, np.random.default_rng(5))
    assert np.array_equal(a, route_up_front("random", 4, 1000, np.random.default_rng(5)))
    assert set(a.tolist()) == {0, 1, 2, 3}
    session = np.array([7, 7, -1, 9, 7, -1])
    got = route_up_front("session", 5, 6, rng, session)
    assert got[0] == got[1] == got[4] == session_replica(np.array([7]), 5)[0]
    assert got[2] == session_replica(np.array([2]), 5)[0]  # unknown session: the request id
    assert np.array_equal(route_up_front("session", 5, 6, rng), session_replica(np.arange(6), 5))
    with pytest.raises(ValueError):
        route_up_front("least_outstanding", 2, 3, rng)


def test_session_hash_is_fixed_and_spreads():
    # splitmix64's first output for seed 0 is 0xE220A8397B1DCDAF (≡ 535 mod 1000): the hash is the
    # published finalizer, the same in every process and on every machine
    keys = np.array([0, 1, 2, 3, -1, 2**40])
    assert session_replica(keys, 1000).tolist() == [535, 465, 110, 53, 936, 641]
    counts = np.bincount(session_replica(np.arange(10_000), 10), minlength=10)
    assert counts.min() > 900


def test_merged_bins_and_histograms_do_not_depend_on_width_history():
    a, b = TimeBins(8), TimeBins(8)
    a.data[a.index(0.0005), 0] += 1.0
    b.data[b.index(0.030), 0] += 2.0  # widens b to 4 ms bins
    m = TimeBins.merged([a, b])
    assert m.width == b.width and m.data[:, 0].sum() == 3.0 and m.data[0, 0] == 1.0
    h1, h2 = LogHistogram(), LogHistogram()
    h1.add(0.01, 2.0)
    h2.add(0.02)
    h = LogHistogram.merged([h1, h2])
    assert h.weight == 3.0 and h.total == 0.04 and h.counts.sum() == 3.0


def test_shard_reason():
    assert shard_reason(config(*TINY, "server.router=round_robin")) is None
    assert "reads replica state" in shard_reason(config(*TINY, "server.router=least_outstanding"))
    assert "one replica" in shard_reason(config("server.replicas=1", "server.router=random"))
    closed = config(*TINY, "server.router=session", "workload.kind=closed", "workload.concurrency=4")
    assert "closed loop" in shard_reason(closed)
    assert groups(5, 2) == [[0, 2, 4], [1, 3]] and groups(2, 8) == [[0], [1]]


@pytest.mark.parametrize("router", STATE_FREE)
def test_shards_in_process_reassemble_the_whole_run(router):
    """Each replica simulated alone fills exactly the rows and the tally it fills in the whole run."""
    cfg = config(*TINY, f"server.router={router}", "server.kv_tokens=6000")
    whole = run_pool(prepare(cfg))
    for group in groups(3, 2):
        shard = run_shard(cfg, group)
        assert np.array_equal(shard["finish_s"], whole.finish_s[shard["rows"]])
        for k, part in shard["parts"].items():
            assert part.__dict__.keys() == whole.parts[k].__dict__.keys()
            assert part.itl.total == whole.parts[k].itl.total and part.queue_area == whole.parts[k].queue_area
            assert np.array_equal(part.bins.data, whole.parts[k].bins.data)
    assert whole.total_preemptions > 0


def test_closed_loop_session_router_pins_each_user():
    class Fake:
        def __init__(self, index):
            self.index, self.got = index, []

        def enqueue(self, rid):
            self.got.append(rid)

    reps = [Fake(i) for i in range(3)]
    loop = ClosedLoop(simpy.Environment(), Router(reps, "session"), 6, np.zeros(60))
    done, rng = set(), np.random.default_rng(1)
    while len(done) < 60:
        waiting = sorted({r for rep in reps for r in rep.got} - done)
        rid = int(rng.choice(waiting))  # completions in a random order
        done.add(rid)
        loop.on_complete(np.array([rid]), 0.0)
    for rep in reps:
        users = loop.user[rep.got]
        assert np.all(session_replica(users, 3) == rep.index)
    assert sorted(r for rep in reps for r in rep.got) == list(range(60))


def _files(out):
    return {name: (out / name).read_bytes() for name in ("summary.json", "requests.csv", "series.csv")}


def test_ray_backend_matches_local_exactly(tmp_path, capsys):
    pytest.importorskip("ray")
    sets = [a for kv in (*TINY, "server.router=random", "acceptance.sts_samples=256") for a in ("--set", kv)]
    assert specbed(["run", *sets, "--quiet", "--out", str(tmp_path / "local")]) == 0
    assert specbed(["run", *sets, "--quiet", "--backend", "ray", "--out", str(tmp_path / "ray")]) == 0
    local, ray = _files(tmp_path / "local"), _files(tmp_path / "ray")
    assert local == ray
    assert json.loads(local["summary.json"])["requests_completed"] == 240


def test_ray_backend_with_a_state_reading_router_stays_local(tmp_path, capsys):
    pytest.importorskip("ray")
    sets = [a for kv in (*TINY, "server.router=least_outstanding") for a in ("--set", kv)]
    assert specbed(["run", *sets, "--quiet", "--backend", "ray"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "one process" in err[0] and "least_outstanding" in err[0]


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--backend", "spark"], "--backend"),
        (["--address", "127.0.0.1:1"], "--address"),  # without --backend ray
        (["--backend", "ray", "--address", "nowhere"], "--address"),
        (["--backend", "ray", "--address", "127.0.0.1:1"], "--address"),
        (["--backend", "ray", "--address", "127.0.0.1:99999"], "--address"),
    ],
)
def test_bad_backend_or_address_is_one_line_exit_2(flags, field, tmp_path, capsys):
    if "ray" in flags:
        pytest.importorskip("ray")
    out = tmp_path / "out"
    assert specbed(["run", "--set", "workload.num_requests=20", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0], err
    assert not (out / "summary.json").exists()


def test_session_router_follows_the_trace_session_column(tmp_path):
    trace = tmp_path / "t.csv"
    rows = [f"{0.05 * i:.2f},{50 + i},{20 + i},{[3, 8, 3, -1, 8, 5][i % 6]}" for i in range(30)]
    trace.write_text("arrival_s,input_tokens,output_tokens,session_id\n" + "\n".join(rows) + "\n")
    cfg = config(
        f"workload.trace={trace}", "workload.kind=trace", "server.replicas=4", "server.router=session"
    )
    rec = run_pool(prepare(cfg))
    session = prepare(cfg).workload.session
    assert session is not None and session.tolist()[:6] == [3, 8, 3, -1, 8, 5]
    keys = np.where(session >= 0, session, np.arange(30))
    assert np.array_equal(rec.replica, session_replica(keys, 4))

"""sim.disagg: pool configs (shape, validation, one-line errors), the hand-off, whole disaggregated runs."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sim.config_io import load_config
from sim.disagg import is_disaggregated, load_disagg, simulate_disagg
from specsched.io.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "configs" / "disagg-small.toml"
FEW = ["workload.num_requests=120"]


def test_small_config_loads_and_colocated_loader_is_unchanged():
    cfg = load_disagg(SMALL, FEW)
    assert (cfg.prefill.replicas, cfg.decode.replicas, cfg.prefill.prefix_hit) == (2, 1, 0.5)
    assert cfg.base.workload.num_requests == 120
    assert is_disaggregated(SMALL) and not is_disaggregated(ROOT / "configs" / "default.toml")
    with pytest.raises(InputError, match="unknown section"):
        load_config(SMALL)  # a colocated run refuses [[pool]]: it is not silently colocated


@pytest.mark.parametrize(
    "override, field",
    [
        ("pool.decode.replicas=0", "pool.decode.replicas"),
        ("pool.prefill.prefix_hit=1.0", "pool.prefill.prefix_hit"),
        ("pool.decode.ep_gpus=16", "pool.decode.attention_ranks"),
        ("pool.decode.budget=rank", "pool.decode.budget"),
        ("handoff.link=pigeon", "handoff.link"),
        ("handoff.draft_kv=maybe", "handoff.draft_kv"),
        ("handoff.streams=abc", "handoff.streams"),
        ("pool.nope.replicas=1", "pool.nope.replicas"),
        (
            "pool.decode.ep_gpus=8,pool.decode.attention_ranks=8,pool.decode.ep_model=llama3-8b",
            "pool.decode.ep_model",
        ),
    ],
)
def test_bad_pool_keys_name_their_field(override, field):
    with pytest.raises(InputError) as err:
        load_disagg(SMALL, [*FEW, *override.split(",")])
    assert err.value.field == field


def test_bad_file_names_file_and_field(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[[pool]]\nrole = "prefill"\nreplicas = -1\n[[pool]]\nrole = "decode"\n')
    with pytest.raises(InputError) as err:
        load_disagg(path)
    assert err.value.field == "pool.prefill.replicas" and err.value.file == str(path)
    path.write_text('[[pool]]\nrole = "prefill"\n')
    with pytest.raises(InputError, match="decode"):
        load_disagg(path)
    path.write_text('[[pool]]\nrole = "decode"\n[[pool]]\nrole = "decode"\n')
    with pytest.raises(InputError, match="two pools"):
        load_disagg(path)


def test_closed_loop_is_refused():
    with pytest.raises(InputError) as err:
        simulate_disagg(load_disagg(SMALL, [*FEW, "workload.kind=closed"]))
    assert err.value.field == "workload.kind"


@pytest.fixture(scope="module")
def small_run():
    return simulate_disagg(load_disagg(SMALL, FEW))


def test_a_disaggregated_run_conserves_requests_and_tokens(small_run):
    r = small_run
    req = r.requests
    assert np.all(np.isfinite(req["finish_s"]))
    assert np.all(req["ready_s"] >= req["prefill_done_s"])
    assert np.all(req["finish_s"] >= req["ready_s"])
    assert np.all(req["ttft_s"] > 0)
    # every output token but the prefill's first is emitted by the decode pool
    assert r.decode["output_tokens"] == int(np.sum(req["output_tokens"][req["output_tokens"] > 1]))
    s = r.summary
    assert s["prefix_hit_rate"] == pytest.approx(0.5, abs=0.01)
    assert s["prefill_input_tok_s_per_gpu"] == pytest.approx(
        2 * s["prefill_computed_tok_s_per_gpu"], rel=0.05
    )
    assert 1.8 < s["tau_mean"] < 1.95  # MTP-1 at DeepSeek's 85–90 % second-token acceptance
    assert s["handoff_exposed_s_mean"] > 0


def test_handoff_and_draft_kv_choices_are_priced(small_run):
    base = small_run.summary
    slow = simulate_disagg(load_disagg(SMALL, [*FEW, "handoff.bandwidth=1e8", "handoff.layerwise=false"]))
    assert slow.summary["handoff_exposed_s_mean"] > 10 * base["handoff_exposed_s_mean"]
    assert slow.summary["ttft_s_mean"] > base["ttft_s_mean"]
    rebuild = simulate_disagg(load_disagg(SMALL, [*FEW, "handoff.draft_kv=rebuild"]))
    assert rebuild.summary["handoff_bytes_mean"] < base["handoff_bytes_mean"]  # the drafter's KV stays
    assert rebuild.decode["steps"] >= small_run.decode["steps"]  # the decode side re-prefills it


def test_an_ep_decode_group_prices_the_group_and_its_ranks():
    ep = [
        *FEW,
        "pool.decode.ep_gpus=16",
        "pool.decode.attention_ranks=16",
        "pool.decode.ep_gpu=h200",
        "pool.decode.ep_intra=nvlink-h200",
        "pool.decode.max_num_seqs=1024",
        "workload.output_tokens=64",
    ]
    group = simulate_disagg(load_disagg(SMALL, ep))
    ranks = simulate_disagg(load_disagg(SMALL, [*ep, "pool.decode.budget=rank"]))
    assert group.summary["decode_gpus"] == ranks.summary["decode_gpus"] == 16
    assert group.decode["output_tokens"] == ranks.decode["output_tokens"]
    for run in (group, ranks):
        assert run.summary["per_user_tok_s_mean"] > 0


def test_same_seed_same_run():
    a = simulate_disagg(load_disagg(SMALL, FEW))
    b = simulate_disagg(load_disagg(SMALL, FEW))
    assert a.summary == b.summary
    c = simulate_disagg(load_disagg(SMALL, [*FEW, "seed=3"]))
    assert c.summary != a.summary
    assert dataclasses.asdict(a.config.prefill) == dataclasses.asdict(c.config.prefill)


def test_shards_by_replica_merge_to_the_single_process_run():
    """What `simulate_disagg_sharded` does on Ray, done in-process: each pool by replica groups, merged."""
    from sim.disagg.run import decode_prep, handoff, prefill_prep, results
    from sim.shard import merge, run_shard, shard_reason

    cfg = load_disagg(SMALL, [*FEW, "server.router=round_robin", "pool.decode.replicas=2"])
    assert shard_reason(cfg) is None
    assert "least_outstanding" in shard_reason(load_disagg(SMALL, FEW))
    whole = simulate_disagg(cfg)
    pprep, cached, prompt = prefill_prep(cfg)
    n = len(pprep.workload)
    prec = merge(n, pprep.config, [run_shard(cfg, [0]), run_shard(cfg, [1])])
    hand, exposed = handoff(cfg, prec, prompt)
    dprep = decode_prep(cfg)
    ready = prec.first_token_s + exposed
    drec = merge(n, dprep.config, [run_shard(cfg, [1], ready), run_shard(cfg, [0], ready)])
    merged = results(cfg, (pprep, prec), (dprep, drec), (hand, exposed, prompt, cached), (0.0, 0.0))
    assert merged.summary == whole.summary


def test_decode_pool_preemption_recomputes_locally_and_releases_all_kv():
    """A decode pool short of KV preempts its newest request, which recomputes prompt + emitted tokens
    there (as a colocated engine does); every request still finishes and every KV slot is released."""
    tight = [*FEW, "workload.input_dist=fixed", "pool.decode.kv_tokens=12000", "pool.decode.max_num_seqs=64"]
    r = simulate_disagg(load_disagg(SMALL, tight))
    assert r.decode["preemptions"] > 0
    assert np.all(np.isfinite(r.requests["finish_s"]))
    roomy = simulate_disagg(load_disagg(SMALL, [*FEW, "workload.input_dist=fixed"]))
    assert r.decode["output_tokens"] == roomy.decode["output_tokens"]


def test_an_ep_prefill_pool_runs_one_replica_per_attention_rank():
    ep = [*FEW, "pool.prefill.ep_gpus=8", "pool.prefill.attention_ranks=8", "pool.prefill.ep_gpu=h800",
          "pool.prefill.replicas=1", "server.router=round_robin"]  # fmt: skip
    r = simulate_disagg(load_disagg(SMALL, ep))
    assert r.summary["prefill_gpus"] == 8
    assert r.prefill["gpus"] == 8 and r.prefill["requests_completed"] == 120
    assert r.summary["ttft_s_mean"] > 0
    with pytest.raises(InputError) as err:
        load_disagg(SMALL, [*ep, "pool.prefill.budget=rank"])
    assert err.value.field == "pool.prefill.budget"


def test_a_busy_link_queues_its_transfers():
    slow = [*FEW, "handoff.bandwidth=2e9", "workload.rate=60"]
    queued = simulate_disagg(load_disagg(SMALL, slow)).requests["handoff_exposed_s"]
    free = simulate_disagg(load_disagg(SMALL, [*slow, "handoff.contention=false"])).requests[
        "handoff_exposed_s"
    ]
    assert np.all(queued >= free - 1e-12) and queued.mean() > free.mean()
    alone = simulate_disagg(load_disagg(SMALL, [*FEW, "workload.rate=0.05", "workload.num_requests=10"]))
    unqueued = simulate_disagg(load_disagg(SMALL, [*FEW, "workload.rate=0.05", "workload.num_requests=10",
                                                   "handoff.contention=false"]))  # fmt: skip
    assert np.allclose(alone.requests["handoff_exposed_s"], unqueued.requests["handoff_exposed_s"])


def test_a_drafter_whose_prefix_kv_is_not_cached_recomputes_it():
    big = [*FEW, "drafter.name=dspark", "drafter.gamma=5", "policy.name=dspark", "policy.k=none"]
    kept = simulate_disagg(load_disagg(SMALL, big))
    lost = simulate_disagg(load_disagg(SMALL, [*big, "pool.prefill.draft_prefix_cached=false"]))
    assert lost.summary["prefill_computed_tok_s_per_gpu"] > kept.summary["prefill_computed_tok_s_per_gpu"]
    assert lost.summary["prefix_hit_rate"] == kept.summary["prefix_hit_rate"]
    assert np.array_equal(lost.requests["input_tokens"], kept.requests["input_tokens"])


CACHED = [*FEW, "pool.prefill.prefix_hit=0", "pool.prefill.prefix_cache=true", "pool.prefill.prefix_groups=8",
          "pool.prefill.prefix_share=0.6", "pool.prefill.replicas=4"]  # fmt: skip


def test_prefix_caches_per_prefill_replica_and_affinity_routing():
    from sim.shard import shard_reason as disagg_shard_reason

    affinity = simulate_disagg(load_disagg(SMALL, CACHED))
    blind = simulate_disagg(load_disagg(SMALL, [*CACHED, "pool.prefill.cache_routing=least_outstanding"]))
    none = simulate_disagg(load_disagg(SMALL, [*CACHED, "pool.prefill.prefix_share=0"]))
    assert 0.3 < blind.summary["prefix_hit_rate"] < affinity.summary["prefix_hit_rate"] < 0.6
    assert none.summary["prefix_hit_rate"] == 0.0
    assert affinity.decode["output_tokens"] == blind.decode["output_tokens"]  # the same requests decode
    assert "prefix_cache" in disagg_shard_reason(load_disagg(SMALL, [*CACHED, "server.router=round_robin"]))


@pytest.mark.parametrize(
    "override, field",
    [
        ("pool.prefill.prefix_cache=true", "pool.prefill.prefix_hit"),  # the config states prefix_hit = 0.5
        ("pool.decode.prefix_cache=true", "pool.decode.prefix_cache"),
        ("pool.prefill.prefix_share=1.5", "pool.prefill.prefix_share"),
        ("pool.prefill.prefix_groups=0", "pool.prefill.prefix_groups"),
        ("pool.prefill.cache_routing=nearest", "pool.prefill.cache_routing"),
    ],
)
def test_bad_prefix_cache_keys_name_their_field(override, field):
    with pytest.raises(InputError) as err:
        load_disagg(SMALL, [*FEW, override])
    assert err.value.field == field

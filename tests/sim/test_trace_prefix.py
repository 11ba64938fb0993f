"""Automatic prefix caching fed by a trace: its `hash_ids` (Mooncake-style blocks) and its sessions."""

import pytest

from sim.config import ServerConfig, SimConfig, WorkloadConfig
from sim.run import simulate
from sim.trace_prefix import hash_id_keys
from specsched.io.errors import InputError


def _run(tmp_path, rows, header, **wl):
    path = tmp_path / "t.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    cfg = SimConfig(
        server=ServerConfig(model="qwen2.5-7b"),
        workload=WorkloadConfig(kind="trace", trace=str(path), num_requests=0, domain="chat", **wl),
    )
    return simulate(cfg).summary


def test_hash_ids_hit_rate_by_hand(tmp_path):
    # One request at a time (100 s apart); Mooncake blocks of 512 tokens = 32 cache blocks of 16.
    rows = [
        "0,1100,4,1 2 3",  # cold: 0 hit
        "100,1100,4,1 2 4",  # trace blocks 1 2 whole (1024 tokens), the partial third is its own: 1024
        "200,600,4,1 5",  # block 1 (512); 5 is partial: 512
        "300,1024,4,1 2",  # 64 blocks cached, the last token is computed: 63 blocks = 1008
        "400,1100,4,9 2 3",  # chained: another first block, no hit: 0
    ]
    s = _run(tmp_path, rows, "arrival_s,input_tokens,output_tokens,hash_ids")
    hit, asked = 1024 + 512 + 1008, 1100 + 1100 + 600 + 1024 + 1100
    print("hash_ids hit rate", s["prefix_cache_hit_rate"])
    assert s["prefix_cache_hit_tokens"] == hit
    assert s["prefix_cache_hit_rate"] == pytest.approx(hit / asked)


def test_hash_block_tokens_is_the_trace_block(tmp_path):
    # Blocks of 32 tokens: request 1 shares ids 1 2 (64 tokens) with request 0.
    rows = ["0,100,4,1 2 3 4", "100,100,4,1 2 7 8"]
    s = _run(tmp_path, rows, "arrival_s,input_tokens,output_tokens,hash_ids", hash_block_tokens=32)
    assert s["prefix_cache_hit_tokens"] == 64


def test_sessions_share_the_previous_prompt(tmp_path):
    rows = [
        "0,100,50,1",  # cold
        "100,300,50,1",  # starts with turn 0's 150 tokens; its 6 prompt blocks are cached: 96
        "200,100,50,2",  # another session: 0
        "300,500,50,1",  # starts with turn 1's 350 tokens; its 18 prompt blocks: 288
    ]
    s = _run(tmp_path, rows, "arrival_s,input_tokens,output_tokens,session_id")
    print("sessions hit rate", s["prefix_cache_hit_rate"])
    assert s["prefix_cache_hit_tokens"] == 96 + 288
    assert s["prefix_cache_hit_rate"] == pytest.approx(384 / 1000)


def test_prefix_caching_off_reports_no_hit_rate(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,hash_ids\n0,100,4,1\n1,100,4,1\n")
    cfg = SimConfig(
        server=ServerConfig(model="qwen2.5-7b", prefix_caching=False),
        workload=WorkloadConfig(kind="trace", trace=str(path), num_requests=0, domain="chat"),
    )
    assert "prefix_cache_hit_rate" not in simulate(cfg).summary


def test_partial_and_uncovered_blocks_are_the_requests_own():
    a, b = hash_id_keys([[1, 2], [1, 2]], [60, 60], 32)
    # 60 tokens: one whole trace block of 32 (2 cache blocks, shared), then a partial one (its own)
    assert len(a) == 3 and a[:2] == b[:2] and a[2] != b[2]


@pytest.mark.parametrize("bad", [0, 100, 8])
def test_bad_hash_block_tokens(bad):
    with pytest.raises(InputError, match="workload.hash_block_tokens"):
        WorkloadConfig(hash_block_tokens=bad)

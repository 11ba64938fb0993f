"""The vLLM-side speculative terms of issue 37 (session 4): greedy cases priced without the sampler, drafting
under tensor parallelism and the draft-model drafter's share of the step."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from bench.bench_spec_tp import step_split
from specsched.draft_lm import get_draft_lm
from specsched.price import get_model
from specsched.price.draft_shape import drafter_shape
from specsched.price.knobs import shipped_knobs
from specsched.price.vllm import VllmSpec, sampling_seconds
from specsched.spec_knobs import shipped_spec_knobs
from validate.spec_cases import read_cases
from validate.spec_replay import step_seconds

CHECK = Path(__file__).resolve().parents[2] / "validate" / "data" / "spec_check.csv"


def _case(case_id: str):
    return next(c for c in read_cases(CHECK) if c.case_id == case_id)


def test_temperature_column_is_read_and_blank_stays_unknown():
    cases = {c.case_id: c for c in read_cases(CHECK)}
    assert cases["vllm20780-e3-k4"].temperature == 0.0  # the vLLM harnesses' default (SPEC_SOURCES.md)
    assert cases["vllm16035-e1-k2"].temperature == 0.0
    assert cases["trtllm-ngram-b1-v5"].temperature is None


def test_greedy_case_drops_the_top_p_sampler_from_both_arms():
    greedy = _case("vllm20780-e1-k3")
    default = dataclasses.replace(greedy, temperature=None)
    sk = shipped_spec_knobs()
    (ar_g, spec_g), (ar_d, spec_d) = step_seconds(greedy, sk), step_seconds(default, sk)
    spec = VllmSpec(model="llama3.1-8b", gpu="h100", max_num_seqs=256)
    per_step = float(sampling_seconds(spec, shipped_knobs("h100"), np.array([1]))[0])
    assert per_step > 1e-4  # Llama-3.1's generation_config filters (top_p 0.9): ~0.8 ms over 128k entries
    assert np.isclose(ar_d - ar_g, per_step) and np.isclose(spec_d - spec_g, per_step)
    # a common term removed from both arms lowers the priced speed-up (the spec step is the longer one)
    assert greedy.emitted * ar_g / spec_g < default.emitted * ar_d / spec_d


def test_tensor_parallel_drafting_keeps_its_fixed_terms():
    eagle3 = drafter_shape("eagle3", get_model("llama3.1-70b"))
    shares = []
    for tp in (2, 4, 8):
        _, verify, draft = step_split(eagle3, "vllm-0.15", tp, 3, 1)
        shares.append(draft / (draft + verify))
    # the draft's weights shard with TP, its launches, collectives and per-kernel floor do not
    assert shares[0] < shares[1] < shares[2]
    # vLLM ≤ 0.10 issues each pass from the host: never cheaper than the graph-replayed 0.15 loop
    assert step_split(eagle3, "vllm-0.10", 8, 3, 1)[2] > step_split(eagle3, "vllm-0.15", 8, 3, 1)[2]


def test_draft_model_drafter_costs_more_than_a_one_layer_head_and_grows_with_k():
    lm, head = get_draft_lm("llama3.2-1b"), drafter_shape("eagle3", get_model("llama3.1-70b"))
    for tp in (4, 8):
        d3, d5 = (step_split(lm, "vllm-0.15", tp, k, 1)[2] for k in (3, 5))
        assert d5 > d3 > step_split(head, "vllm-0.15", tp, 3, 1)[2]


def test_a_sharded_draft_pass_pays_the_embedding_all_reduce_too():
    from specsched.price import get_gpu
    from specsched.price.draft_shape import pass_seconds

    gpu, knobs = get_gpu("h100"), shipped_knobs("h100")
    shape = drafter_shape("eagle1", get_model("llama3.1-70b"))
    link = gpu.link_latency if knobs.link_latency is None else knobs.link_latency
    free = dataclasses.replace(knobs, link_latency=0.0)
    got = float(pass_seconds(shape, gpu, knobs, 1, tp=4, head_gather=1))
    # one layer's two all-reduces, the token embedding's, the LM head's gather
    assert got - float(pass_seconds(shape, gpu, free, 1, tp=4, head_gather=1)) == pytest.approx(4 * link)
    assert float(pass_seconds(shape, gpu, knobs, 1, tp=1)) == float(pass_seconds(shape, gpu, free, 1))


def test_vllm_v0_first_pass_runs_its_layers_over_the_accepted_positions_only():
    from specsched.price import get_gpu
    from specsched.price.draft_shape import own_draft_cost

    target, gpu, knobs = get_model("llama3.1-8b"), get_gpu("h100"), shipped_knobs("h100")
    shape = drafter_shape("eagle1", target)
    x = np.array([512 * 4])  # 512 requests, K = 3: indexed by R·(1 + K); compute-bound there
    for engine, shrinks in (("vllm-0.10", True), ("vllm-0.11", False), ("vllm-0.15", False)):
        full, part = (own_draft_cost(shape, target, gpu, knobs, 3, 1536, engine=engine, emitted=e)[0]
                      for e in (None, 2.0))  # fmt: skip
        got_full, got_part = float(full.first.latency(x)[0]), float(part.first.latency(x)[0])
        assert (got_part < got_full) if shrinks else got_part == got_full

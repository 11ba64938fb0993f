"""KV capacity as vLLM sizes it (`specsched.price.kv.size_kv`), against what vLLM logged (docs/memory.md).

Quoted figures (public issue threads):
- vllm-project/vllm#10517 (comment of 2024-12-02; Llama-3.1-8B-Instruct on an RTX 3090, vLLM's v0
  engine, no chunked prefill, so the profile runs max_model_len tokens): "total_gpu_memory=23.58GiB ...
  peak_torch_memory=17.06GiB ... non_torch_memory=0.35GiB kv_cache_size=3.81GiB
  gpu_memory_utilization=0.90 / GPU blocks: 1952" at max_model_len 20000, and "peak_torch_memory=17.98GiB
  ... kv_cache_size=2.89GiB / # GPU blocks: 1478" at 29000, after "Loading model weights took 14.9888 GB".
  The activation peak is peak_torch − weights: 2.07 and 2.99 GiB. CUDA graphs were captured after the
  cache there (outside the budget): cudagraphs=False.
- LMCache/LMCache#1739 (Qwen3-14B, vLLM v1): "Available KV cache memory: 6.51 GiB" then "GPU KV cache
  size: 42,656 tokens".
Before this check the activation form (every buffer summed, plus the logits) read 2.69 / 3.79 GiB and the
blocks 1,525 / 962 (−22 % / −35 %).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from specsched.price import get_gpu, get_model
from specsched.price.kv import BLOCK_SIZE, peak_activation_bytes, size_kv
from specsched.price.models import GiB
from specsched.price.vllm import VllmSpec

RTX3090 = replace(get_gpu("a100"), visible_memory=23.58 * GiB)  # only the memory is read


@pytest.mark.parametrize(("tokens", "activation_gib", "blocks"), [(20000, 17.06 - 14.99, 1952),
                                                                   (29000, 17.98 - 14.99, 1478)])  # fmt: skip
def test_llama31_8b_profile_matches_vllm_log(tokens, activation_gib, blocks):
    m = get_model("llama3.1-8b")
    act = peak_activation_bytes(m, 1, tokens, 256) / GiB
    assert act == pytest.approx(activation_gib, rel=0.02)
    kv = size_kv(m, RTX3090, max_num_batched_tokens=tokens, max_num_seqs=256, cudagraphs=False)
    assert kv.kv_tokens // BLOCK_SIZE == pytest.approx(blocks, rel=0.02)


def test_kv_bytes_per_token_match_vllm_log():
    per_token = get_model("qwen3-14b").kv_bytes_per_gpu(1)
    assert int(6.51 * GiB // (BLOCK_SIZE * per_token)) * BLOCK_SIZE == 42_656


def test_h100_deployments_of_the_closed_loop_set():
    """The figures docs/memory.md quotes; the ordering is physical (FP8 weights and cache: more than
    twice the BF16 tokens; TP 8 holds more per GPU than TP 4 as weights shrink)."""
    kv = {k: VllmSpec(**spec).kv_capacity() for k, spec in {
        "8b": dict(model="llama3.1-8b"),
        "8b-fp8": dict(model="llama3.1-8b", precision="fp8", kv_cache_dtype="fp8"),
        "70b-tp4": dict(model="llama3.1-70b", tp=4),
        "70b-tp8": dict(model="llama3.1-70b", tp=8),
        "32b-tp1": dict(model="qwen3-32b"),
    }.items()}  # fmt: skip
    assert 440_000 < kv["8b"] < 460_000 and kv["8b-fp8"] > 2 * kv["8b"]
    assert kv["70b-tp8"] > 2.5 * kv["70b-tp4"] and 25_000 < kv["32b-tp1"] < 45_000

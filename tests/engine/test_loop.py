"""The decode loop: KV cache and rollback, coupled mode = plain decoding, batch invariance, end-to-end law."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.loop as loop
from engine.drafter import ModelDrafter
from engine.loop import Engine, EngineConfig, Request
from engine.model import KVCache, ModelConfig, TinyLM
from engine.proof.suite_engine import make_engine, mixed_requests, tiny_models
from engine.sampling import SamplingParams, probs_from_logits
from tests.engine.lawcheck import assert_follows_target_law

TARGET, TRUNC, OTHER = tiny_models()
REQS = mixed_requests(6)
PLAIN = make_engine(TARGET, None).generate(REQS, speculative=False)


def test_cached_ragged_forward_with_rollback_equals_full_forward():
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 48, (3, 12), generator=gen)
    full = TARGET.logits_full(tokens)
    cache = KVCache(TARGET.config, 5, 40)
    slots = torch.tensor([4, 0, 2])
    chunks, pos, outs = [[3, 2, 7], [1, 4, 7], [5, 1, 6]], [0, 0, 0], [[], [], []]
    for step in range(3):
        n = torch.tensor([chunks[r][step] for r in range(3)])
        junk = torch.randint(0, 48, (3, int(n.max()) + 3), generator=gen)
        TARGET.forward(junk, n + 3, slots, cache)  # speculative writes past the pointer, then "rejected"
        batch = torch.zeros(3, int(n.max()), dtype=torch.int64)
        for r in range(3):
            batch[r, : n[r]] = tokens[r, pos[r] : pos[r] + n[r]]
        logits = TARGET.forward(batch, n, slots, cache)
        for r in range(3):
            outs[r].append(logits[r, : n[r]])
            pos[r] += int(n[r])
        cache.lengths[slots] += n
    for r in range(3):
        assert torch.allclose(torch.cat(outs[r]), full[r], atol=1e-10)


@pytest.mark.parametrize("draft", ["trunc", "other"])
@pytest.mark.parametrize(
    "policy",
    [
        ("dspark", {}),
        ("dspark_global", {"delay": 1}),
        ("dspark_global", {"delay": 2}),
        ("fixed", {"k": 4}),
        ("threshold", {"threshold": 0.3}),
        ("lookahead", {}),
    ],
)
def test_coupled_mode_equals_plain_decoding(policy, draft):
    drafter = {"trunc": TRUNC, "other": OTHER}[draft]
    engine = make_engine(TARGET, drafter, policy=policy[0], mode="coupled", max_running=3, **policy[1])
    assert engine.generate(REQS) == PLAIN


@settings(max_examples=8)
@given(st.permutations(range(6)), st.integers(1, 6), st.sampled_from(["coupled", "standard"]))
def test_seeded_request_is_independent_of_its_batch(order, max_running, mode):
    """Standard mode with a batch-blind policy (fixed) and coupled mode with a global one (dspark_global)."""
    policy = ("fixed", {"k": 3}) if mode == "standard" else ("dspark_global", {"delay": 2})
    reference = make_engine(TARGET, TRUNC, policy=policy[0], mode=mode, **policy[1]).generate(REQS[:1])
    reqs = [REQS[i] for i in order]
    out = make_engine(
        TARGET, TRUNC, policy=policy[0], mode=mode, max_running=max_running, **policy[1]
    ).generate(reqs)
    assert out[0] == reference[0]


def test_policy_ar_reproduces_plain_decoding_in_standard_mode():
    assert make_engine(TARGET, TRUNC, policy="ar").generate(REQS) == PLAIN


def test_verify_rows_and_draft_rows_are_what_full_forwards_give(monkeypatch):
    """Every verify call sees q = the draft's full-forward distribution of the drafted context and p = the
    target's (catches KV rollback, bonus-token and row-offset bugs)."""
    engine = make_engine(TARGET, TRUNC, policy="dspark", max_running=4)
    seen = []
    real = loop.rejection_sample

    def spy(d, q, p, lengths, **kw):
        seen.append((d.clone(), q.clone(), p.clone(), lengths.clone()))
        return real(d, q, p, lengths, **kw)

    real_step = engine._spec_step
    contexts = []

    def step(running):
        contexts.append([list(x.tokens) for x in running])
        contexts[-1] = (contexts[-1], [x.params for x in running])
        return real_step(running)

    monkeypatch.setattr(loop, "rejection_sample", spy)
    monkeypatch.setattr(engine, "_spec_step", step)
    engine.generate(REQS[:4])
    for (ctxs, params), (d, q, p, lengths) in zip(contexts, seen):
        for i, ctx in enumerate(ctxs):
            seq = torch.tensor([ctx + d[i].tolist()])
            n = len(ctx)
            want_q = probs_from_logits(TRUNC.logits_full(seq)[0, n - 1 : n - 1 + d.shape[1]], params[i])
            want_p = probs_from_logits(TARGET.logits_full(seq)[0, n - 1 : n + int(lengths[i])], params[i])
            assert torch.allclose(q[i], want_q, atol=1e-10)
            assert torch.allclose(p[i, : int(lengths[i]) + 1], want_p, atol=1e-10)


def test_standard_mode_end_to_end_law_matches_the_target(tmp_path):
    """χ² of the joint law of 4 generated tokens (V = 3, temperature 0.9, top-p 0.95) over 6000 seeded
    requests decoded speculatively in one batch (dspark_global with 1-step-stale confidences, a flat cost so
    it speculates), against the target's exact law from full forwards. Power check: accepting with u·0.3
    instead of u gives χ² ~ 1800 against a threshold ~ 37; an off-by-one target row gives thousands."""
    cfg = ModelConfig(vocab_size=3, d_model=16, n_layers=2, n_heads=2, max_len=16, seed=4, dtype="float64")
    target, draft = TinyLM(cfg), TinyLM(ModelConfig(**{**cfg.__dict__, "seed": 5, "n_layers": 1}))
    (tmp_path / "flat.csv").write_text("tokens,seconds\n1,1.0\n100000,1.0\n")
    params, n, length = SamplingParams(0.9, top_p=0.95), 6000, 4
    config = EngineConfig(
        gamma=3,
        policy="dspark_global",
        policy_params={"delay": 1},
        max_running=n,
        cost=str(tmp_path / "flat.csv"),
    )
    engine = Engine(target, ModelDrafter(draft, slots=n, max_len=16), config, max_len=16)
    out = engine.generate([Request(i, (0, 1), length, params, seed=i) for i in range(n)])
    assert_follows_target_law(target, out, params, length, n)
    assert engine.stats.verified_drafts > n  # it did speculate
    assert 0 <= engine.stats.accepted <= engine.stats.verified_drafts


def test_config_and_request_errors_name_the_field():
    with pytest.raises(ValueError, match="mode"):
        EngineConfig(mode="fast")
    with pytest.raises(ValueError, match="gamma"):
        EngineConfig(gamma=-1)
    with pytest.raises(ValueError, match="prompt"):
        Request(0, (), 3)
    with pytest.raises(ValueError, match="policy"):
        make_engine(TARGET, TRUNC, policy="nope")
    with pytest.raises(ValueError, match="max_len"):
        make_engine(TARGET, TRUNC).generate([Request(0, (1,), 200)])
    with pytest.raises(ValueError, match="unique"):
        make_engine(TARGET, TRUNC).generate([Request(0, (1,), 3), Request(0, (2,), 3)])


def test_device_errors_name_the_field():
    with pytest.raises(ValueError, match="'device'"):
        EngineConfig(device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'device'.*CUDA is not available"):
            EngineConfig(device="cuda")
    else:  # the models stay where the caller put them: a CPU target with a CUDA config is refused
        with pytest.raises(ValueError, match="'device'"):
            Engine(TARGET, None, EngineConfig(device="cuda"), max_len=96)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_coupled_mode_equals_plain_decoding():
    """The exact invariant on the device (CUDA rounding may differ from the CPU's, so not == PLAIN)."""
    moved = [TinyLM(m.config, {k: v.cuda() for k, v in m.w.items()}) for m in (TARGET, TRUNC)]
    config = EngineConfig(gamma=4, policy="dspark", mode="coupled", max_running=4, device="cuda")
    plain = Engine(moved[0], None, config, max_len=96).generate(REQS, speculative=False)
    drafter = ModelDrafter(moved[1], slots=4, max_len=96, device="cuda")
    assert Engine(moved[0], drafter, config, max_len=96).generate(REQS) == plain

"""Model plumbing: the engine target's hidden states = training mode's, the Markov head at zero weights,
confidences in (0, 1), the corpus is deterministic, and every drafter is lossless in the engine (coupled
mode = plain decoding)."""

import numpy as np
import pytest
import torch

from engine.drafter import HiddenRelay, TargetHidden
from engine.lm.data import DOMAINS, SEP, Corpus
from engine.lm.drafters import runtime_drafter
from engine.lm.target import TargetLM, target_outputs
from engine.loop import Engine, EngineConfig
from engine.measure.profile import mixed_requests
from engine.model import KVCache, TinyLM
from engine.sampling import SamplingParams, probs_from_logits


def test_handed_hidden_states_match_training_mode(tiny_bundle):
    """What the loop hands a drafter (TargetHidden.committed of a cached forward's packed hidden states) is
    the training-mode forward's hidden states at those positions; asking for them leaves the logits as is."""
    bundle, corpus = tiny_bundle
    tokens = corpus.batch("val", 3, 20, torch.Generator().manual_seed(0))
    tl = bundle.target()
    cache_a, cache_b = KVCache(bundle.config, 3, 40), KVCache(bundle.config, 3, 40)
    n, slots = torch.tensor([20, 11, 5]), torch.tensor([2, 0, 1])
    out = tl.run(tokens, n, slots, cache_a, hidden=True)
    assert torch.equal(out.logits, tl.forward(tokens, n, slots, cache_b))
    assert torch.equal(cache_a.k, cache_b.k)
    kept = TargetHidden.committed(out.hidden, [0, 0, 0], n.tolist(), [20, 9, 5])  # request 1: 2 rejected
    _, hidden = target_outputs(bundle.weights, bundle.config, tokens)
    assert [k[1].shape[0] for k in kept] == [20, 9, 5]
    for i, (first, states) in enumerate(kept):
        assert first == 0 and torch.allclose(states, hidden[i, : len(states)], atol=1e-4)
    handed = TargetHidden.of([kept[0], None], cache_a.k)
    assert handed.starts == (0, 0) and handed.states[1].shape == (
        0,
        bundle.config.n_layers,
        bundle.config.d_model,
    )


def test_trained_twin_exports_to_tinylm(tiny_bundle):
    bundle, corpus = tiny_bundle
    model = TargetLM(bundle.config, torch.Generator().manual_seed(3))
    tokens = corpus.batch("val", 2, 16, torch.Generator().manual_seed(1))
    logits, _ = model(tokens)
    assert torch.allclose(TinyLM(bundle.config, model.weights()).logits_full(tokens), logits, atol=1e-4)


class _Req:
    def __init__(self, rid, tokens, slot, params):
        self.rid, self.tokens, self.slot, self.params = rid, list(tokens), slot, params


def test_markov_head_with_zero_weights_leaves_backbone_unchanged(tiny_bundle):
    bundle, corpus = tiny_bundle
    net = bundle.net("dspark1")
    saved = net.w2.detach().clone()
    try:
        with torch.no_grad():
            net.w2.zero_()
        h = torch.randn(5, bundle.config.d_model)
        bias, _, _ = net.markov_step(h, torch.tensor([1, 2, 3, 4, 5]))
        assert torch.count_nonzero(bias) == 0
        target = bundle.target()
        drafter = runtime_drafter(net, target, slots=2, max_len=48)
        prompt = corpus.prompts("code", 1, 10, seed=1)[0]
        reqs = [_Req(0, prompt, 0, rq.params) for rq in mixed_requests(corpus, 1, 10, 4, seed=0)]
        e = torch.empty(1, 3, 256, dtype=torch.float64).exponential_(
            generator=torch.Generator().manual_seed(0)
        )
        prop = drafter.propose(reqs, 3, e)
        z = torch.zeros(1, dtype=torch.int64)
        _, u = net.draft_hidden(
            torch.tensor([prompt[-1]]),
            torch.tensor([9]),
            [torch.zeros(1, 2, 1, 16)],
            [torch.zeros(1, 2, 1, 16)],
            z,
            net.cfg.gamma,
        )
        assert torch.allclose(prop.probs, probs_from_logits(u[:, :3], reqs[0].params), atol=1e-6)
    finally:
        with torch.no_grad():
            net.w2.copy_(saved)


def test_confidences_in_open_unit_interval(tiny_bundle):
    bundle, corpus = tiny_bundle
    target = bundle.target()
    drafter = runtime_drafter(bundle.net("dspark1"), target, slots=4, max_len=48, temps=None)
    reqs = mixed_requests(corpus, 4, 12, 16, seed=3)
    seen = []

    class Spy:
        uses_hidden = True

        def propose(self, reqs, gamma, e, hidden=None):
            p = drafter.propose(reqs, gamma, e, hidden)
            seen.append(p.conf.clone())
            return p

        def release(self, rid):
            drafter.release(rid)

    Engine(target, Spy(), EngineConfig(gamma=4, policy="dspark", max_running=4), max_len=48).generate(reqs)
    conf = torch.cat(seen)
    assert conf.numel() > 0 and bool(((conf > 0) & (conf < 1)).all())


@pytest.mark.parametrize("name", ["eagle1", "dflash1", "dspark1"])
@pytest.mark.parametrize("policy", [("fixed", {"k": 3}), ("dspark", {}), ("dspark_global", {"delay": 2})])
def test_coupled_mode_equals_plain_decoding(tiny_bundle, name, policy):
    bundle, corpus = tiny_bundle
    reqs = mixed_requests(corpus, 5, 10, 14, seed=4)
    plain = Engine(bundle.target(), None, EngineConfig(gamma=3, max_running=2), max_len=48).generate(
        reqs, speculative=False
    )
    target = bundle.target()
    drafter = runtime_drafter(bundle.net(name), target, slots=2, max_len=48, temps=bundle.drafters[name][1])
    cfg = EngineConfig(gamma=3, policy=policy[0], policy_params=policy[1], mode="coupled", max_running=2)
    assert Engine(target, drafter, cfg, max_len=48).generate(reqs) == plain


def test_corpus_is_deterministic_and_prompts_are_clean(tiny_bundle):
    _, corpus = tiny_bundle
    again = Corpus.build(
        corpus_cfg := __import__("engine.lm.train", fromlist=["PRESETS"]).PRESETS["tiny"].data
    )
    assert corpus_cfg.seed == 0
    for key, stream in corpus.streams.items():
        assert np.array_equal(stream, again.streams[key])
    a = corpus.batch("train", 3, 30, torch.Generator().manual_seed(5))
    b = again.batch("train", 3, 30, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    for dom in DOMAINS:
        for p in corpus.prompts(dom, 3, 16, seed=2):
            assert len(p) == 16 and SEP not in p


def _prefill_hidden(bundle, target, prompt) -> TargetHidden:
    """The hidden states a prefill of `prompt` (one request, cache slot 0) hands the drafter."""
    n = torch.tensor([len(prompt)])
    out = target.run(torch.tensor([prompt]), n, torch.tensor([0]), KVCache(bundle.config, 1, 48), hidden=True)
    return TargetHidden((0,), (out.hidden,))


def _fresh(tiny_bundle, name, markov=None):
    """A freshly initialised drafter (random Markov and confidence weights too) on the tiny target."""
    import dataclasses

    from engine.lm.checkpoint import build_drafter
    from engine.lm.train import PRESETS

    bundle, corpus = tiny_bundle
    cfg = PRESETS["tiny"].draft_config(name)
    if markov is not None:
        cfg = dataclasses.replace(cfg, markov=markov)
    net = build_drafter(cfg, bundle.config, bundle.weights, torch.Generator().manual_seed(11)).eval()
    if hasattr(net, "w2"):
        gen = torch.Generator().manual_seed(12)
        with torch.no_grad():
            net.w2.normal_(0, 0.5, generator=gen)
            net.conf_w.normal_(0, 0.5, generator=gen)
    return net


@pytest.mark.parametrize("name", ["dspark1", "eagle1"])
def test_cached_inference_matches_training_mode(tiny_bundle, name):
    """The engine drafter (incremental caches, RoPE at absolute positions) reproduces the training-mode
    forward: position 1 from the real context, and for EAGLE position 2 through the chained pass."""
    bundle, corpus = tiny_bundle
    net = _fresh(tiny_bundle, name)
    prompt = list(corpus.prompts("code", 1, 20, seed=3)[0])
    params = SamplingParams()
    target = bundle.target()
    drafter = runtime_drafter(net, target, slots=1, max_len=48)
    req = _Req(0, prompt, 0, params)
    e = torch.empty(1, 3, 256, dtype=torch.float64).exponential_(generator=torch.Generator().manual_seed(4))
    drafter.propose([req], 3, e)  # first step: no features yet
    prop = drafter.propose([req], 3, e, _prefill_hidden(bundle, target, prompt))  # features of the prompt
    n = len(prompt)
    with torch.no_grad():
        if name == "eagle1":
            seq = torch.tensor([prompt + [int(prop.tokens[0, 0])]])
            _, hidden = target_outputs(bundle.weights, bundle.config, seq)
            outs = net.depth_outputs(seq, hidden)
            want0 = torch.softmax(net.frozen.logits(outs[0][0, n - 2]), -1)
            want1 = torch.softmax(net.frozen.logits(outs[1][0, n - 1]), -1)
            assert torch.allclose(prop.probs[0, 1], want1, atol=1e-5)
        else:
            seq = torch.tensor([prompt])
            _, hidden = target_outputs(bundle.weights, bundle.config, seq)
            h, u = net.blocks_forward(seq, hidden, torch.tensor([[n - 1]]))
            bias, _, _ = net.markov_step(h[0, 0, 0], torch.tensor(prompt[-1]))
            want0 = torch.softmax(u[0, 0, 0] + bias, -1)
    assert torch.allclose(prop.probs[0, 0], want0, atol=1e-5)


@pytest.mark.parametrize("markov", ["vanilla", "gated", "rnn"])
def test_sequential_head_matches_teacher_forced_training(tiny_bundle, markov):
    """Every block position: the engine drafter's q_k and raw confidence equal the training-mode forward
    teacher-forced on the tokens it drafted (the rnn state carried through the block the same way)."""
    bundle, corpus = tiny_bundle
    net = _fresh(tiny_bundle, "dspark1", markov)
    gamma = net.cfg.gamma
    prompt = list(corpus.prompts("prose", 1, 20, seed=5)[0])
    target = bundle.target()
    drafter = runtime_drafter(net, target, slots=1, max_len=48)
    req = _Req(0, prompt, 0, SamplingParams())
    e = torch.empty(1, gamma, 256, dtype=torch.float64).exponential_(
        generator=torch.Generator().manual_seed(6)
    )
    drafter.propose([req], gamma, e)
    prop = drafter.propose([req], gamma, e, _prefill_hidden(bundle, target, prompt))
    n = len(prompt)
    with torch.no_grad():
        _, hidden = target_outputs(bundle.weights, bundle.config, torch.tensor([prompt]))
        h, u = net.blocks_forward(torch.tensor([prompt]), hidden, torch.tensor([[n - 1]]))
        prev = torch.cat([torch.tensor(prompt[-1:]), prop.tokens[0, : gamma - 1]])
        bias, z = net.markov(h[0, 0], prev)
    assert torch.allclose(prop.probs[0], torch.softmax(u[0, 0] + bias, -1), atol=1e-5)
    assert torch.allclose(drafter.last_raw_conf[0], torch.sigmoid(z.double()), atol=1e-5)
    if markov == "rnn":  # the state matters: another first draft changes later positions' bias
        other = prev.clone()
        other[1] = (other[1] + 1) % 256
        bias2, _ = net.markov(h[0, 0], other)
        assert not torch.allclose(bias[2:], bias2[2:])


def test_hidden_states_do_not_leak_between_generate_calls(tiny_bundle):
    """The same requests (same rids) decoded twice on one engine: the second run hands the drafter only its
    own hidden states, so the outputs match."""
    bundle, corpus = tiny_bundle
    reqs = mixed_requests(corpus, 3, 10, 8, seed=2)
    target = bundle.target()
    drafter = runtime_drafter(bundle.net("eagle1"), target, slots=2, max_len=48)
    engine = Engine(target, drafter, EngineConfig(gamma=3, max_running=2), max_len=48)
    assert engine.generate(reqs) == engine.generate(reqs)


def test_drafter_refuses_hidden_states_that_do_not_line_up(tiny_bundle):
    bundle, _ = tiny_bundle
    drafter = runtime_drafter(bundle.net("dspark1"), bundle.target(), slots=1, max_len=48)
    req, e = _Req(0, [1, 2, 3], 0, SamplingParams()), torch.zeros(1, 2, 256, dtype=torch.float64)
    states = torch.zeros(3, bundle.config.n_layers, bundle.config.d_model)
    with pytest.raises(ValueError, match="hidden states for 2 requests, 1 proposed"):
        drafter.propose([req], 2, e, TargetHidden((0, 0), (states, states)))
    drafter.propose([req], 2, e, TargetHidden((0,), (states,)))
    with pytest.raises(ValueError, match="hidden states from 5, expected 3"):
        drafter.propose([req], 2, e, TargetHidden((5,), (states,)))


def test_relay_keeps_a_skipping_requests_states_until_it_drafts():
    """A request the plan gave depth 0 skips the drafter: what it commits meanwhile is handed over,
    contiguous, the next time it drafts; requests no longer running are dropped."""
    relay, like = HiddenRelay(), torch.zeros(2, 1, 1, 4, 3)  # KV cache [L=2, slots, H=1, T, Dh=3]
    relay.computed = torch.arange(5 * 2 * 3, dtype=torch.float32).reshape(5, 2, 3)
    relay.keep([7, 8], [0, 0], [3, 2], [3, 1])  # rid 7: positions 0..2; rid 8: 0 (its 2nd fed row rejected)
    assert relay.hand([8], like).states[0].shape == (1, 2, 3)
    first = relay.computed[:3]
    relay.computed = torch.ones(2, 2, 3)
    relay.keep([7, 8], [3, 1], [1, 1], [4, 2])  # rid 7 skipped the drafter last step
    got = relay.hand([7, 9], like)
    assert got.starts == (0, 0) and torch.equal(got.states[0], torch.cat([first, torch.ones(1, 2, 3)]))
    assert got.states[1].shape == (0, 2, 3)  # never seen: nothing
    relay.keep([7], [4], [1], [5])  # rid 8 finished: dropped
    assert set(relay.kept) == {7}

"""The draft distribution the verifier gets is exactly the one each draft token was sampled from.

Resampling check: N identical requests draft with independent Exp(1) noise; at each position k the token
counts are compared (Pearson χ², bins with expected count < 5 merged, threshold df + 10·√(2·df)) with the
sum of the returned rows q_k (each row is the distribution of its own sample; for DSpark it depends on the
sampled previous token through the Markov head). The Markov head is made strong (random W2) so that a
drafter returning the backbone-only distribution fails: the negative control.
"""

import pytest
import torch

from engine.lm.drafters import runtime_drafter
from engine.proof.stats import chi2_threshold, merged_chi2
from engine.sampling import SamplingParams, probs_from_logits

N, GAMMA = 6000, 3


class _Req:
    def __init__(self, rid, tokens, params):
        self.rid, self.tokens, self.slot, self.params = rid, list(tokens), 0, params


def _chi2(tokens, expected_rows):
    counts = torch.bincount(tokens, minlength=expected_rows.shape[-1]).double().numpy()
    stat, df = merged_chi2(counts, expected_rows.double().sum(0).numpy())
    return stat, df


def _propose(bundle, corpus, name, params, strong_markov=False):
    net = bundle.net(name)
    saved = None
    if strong_markov:
        saved = net.w2.detach().clone()
        with torch.no_grad():
            net.w2.copy_(torch.randn(net.w2.shape, generator=torch.Generator().manual_seed(7)) * 2.0)
    try:
        target = bundle.target()
        prompt = corpus.prompts("prose", 1, 12, seed=9)[0]
        drafter = runtime_drafter(net, target, slots=N, max_len=48, temps=bundle.drafters[name][1])
        reqs = [_Req(i, prompt, params) for i in range(N)]
        e = torch.empty(N, GAMMA, 256, dtype=torch.float64).exponential_(
            generator=torch.Generator().manual_seed(1)
        )
        prop = drafter.propose(reqs, GAMMA, e)
        backbone = None
        if strong_markov:
            z = torch.zeros(N, dtype=torch.int64)
            ck = [torch.zeros(N, net.tcfg.n_heads, 1, net.tcfg.head_dim)] * len(net.blocks)
            _, u = net.draft_hidden(
                torch.full((N,), prompt[-1]), torch.full((N,), len(prompt) - 1), ck, ck, z, net.cfg.gamma
            )
            backbone = probs_from_logits(u[:, :GAMMA], params)
        return prop, backbone
    finally:
        if saved is not None:
            with torch.no_grad():
                net.w2.copy_(saved)


@pytest.mark.parametrize("name", ["eagle1", "dflash1", "dspark1"])
@pytest.mark.parametrize("params", [SamplingParams(), SamplingParams(temperature=0.7, top_k=20)])
def test_returned_q_is_the_sampling_distribution(tiny_bundle, name, params):
    bundle, corpus = tiny_bundle
    prop, _ = _propose(bundle, corpus, name, params, strong_markov=name == "dspark1")
    for k in range(GAMMA):
        stat, df = _chi2(prop.tokens[:, k], prop.probs[:, k])
        assert df > 0 and stat <= chi2_threshold(df), (k, stat, df)
        assert torch.all(prop.probs[:, k].gather(1, prop.tokens[:, k : k + 1]) > 0)


def test_backbone_only_distribution_is_caught(tiny_bundle):
    bundle, corpus = tiny_bundle
    prop, backbone = _propose(bundle, corpus, "dspark1", SamplingParams(), strong_markov=True)
    worst = max(
        _chi2(prop.tokens[:, k], backbone[:, k])[0]
        / chi2_threshold(_chi2(prop.tokens[:, k], backbone[:, k])[1])
        for k in range(GAMMA)
    )
    assert worst > 3.0

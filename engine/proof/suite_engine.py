"""Suite rows that exercise tensors and the decode loop: Triton parity, coupled/batch invariance, bad rows.

Role: the second half of `specbed verify` (engine.proof.suite holds the exact and χ² halves) and shared input
generators for tests/engine (`random_verify_inputs`, `tiny_models`, `mixed_requests`).

May import: torch, numpy, stdlib, specsched (the registry), engine.*.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

import specsched
from engine.drafter import ModelDrafter
from engine.loop import Engine, EngineConfig, Request
from engine.model import ModelConfig, TinyLM
from engine.proof.table import Row
from engine.sampling import SamplingParams
from engine.verify import rejection_sample

ODD_VOCABS = (1, 2, 3, 5, 7, 13, 33, 100)


def random_verify_inputs(
    gen: torch.Generator,
    r: int,
    gamma: int,
    vocab: int,
    *,
    dtype=torch.float32,
    device="cpu",
    sparsity: float = 0.3,
) -> dict[str, torch.Tensor]:
    """Valid rejection_sample inputs with zeros in the rows, drafts sampled from q, ragged lengths that
    include 0 and γ, and injected noise (uniforms, exponentials)."""

    def rows(*shape):
        logits = torch.randn(*shape, generator=gen, dtype=torch.float64) * 2
        mask = torch.rand(*shape, generator=gen, dtype=torch.float64) < sparsity
        mask[..., 0] = False  # keep every row non-empty
        return torch.softmax(logits.masked_fill(mask, float("-inf")), -1).to(dtype)

    q = rows(r, gamma, vocab)
    p = rows(r, gamma + 1, vocab)
    if gamma:
        drafts = torch.multinomial(q.double().reshape(-1, vocab), 1, generator=gen).reshape(r, gamma)
    else:
        drafts = torch.zeros((r, 0), dtype=torch.int64)
    lengths = torch.randint(0, gamma + 1, (r,), generator=gen)
    lengths[0] = 0
    lengths[-1] = gamma
    u = torch.rand(r, gamma, generator=gen, dtype=torch.float64)
    e = torch.empty(r, vocab, dtype=torch.float64).exponential_(generator=gen)
    out = {
        "draft_tokens": drafts,
        "draft_probs": q,
        "target_probs": p,
        "lengths": lengths,
        "uniforms": u,
        "exponentials": e,
    }
    return {k: v.to(device) for k, v in out.items()}


def parity_rows(rng: np.random.Generator, device: str, n: int) -> Iterator[tuple]:
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    same = 0
    for i in range(n):
        r = [1, 2, 5, 9][i % 4]
        gamma = int(rng.integers(0, 5))
        vocab = ODD_VOCABS[i % len(ODD_VOCABS)]
        dtype = (torch.float32, torch.float64)[i % 2]
        inputs = random_verify_inputs(gen, r, gamma, vocab, dtype=dtype, device=device)
        a = rejection_sample(**inputs, backend="torch")
        b = rejection_sample(**inputs, backend="triton")
        same += bool(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]))
    yield Row(
        f"triton == torch bit for bit (injected noise, {device})", n, same == n, f"{same}/{n} identical"
    )


def tiny_models(seed: int = 0, *, dtype: str = "float64") -> tuple[TinyLM, TinyLM, TinyLM]:
    """(target, truncated 1-layer draft, independent smaller draft) -- small enough for tests."""
    cfg = ModelConfig(
        vocab_size=48, d_model=32, n_layers=2, n_heads=2, max_len=96, seed=seed, dtype=dtype, init_scale=0.5
    )
    target = TinyLM(cfg)
    other = TinyLM(
        ModelConfig(vocab_size=48, d_model=16, n_layers=1, n_heads=2, max_len=96, seed=seed + 1, dtype=dtype)
    )
    return target, target.truncated(1), other


def mixed_requests(n: int, *, seed: int = 3, new_tokens: int = 12) -> list[Request]:
    """Requests with mixed prompts, lengths and sampling params (greedy, temperature, top-k, top-p)."""
    params = [
        SamplingParams(),
        SamplingParams(0.0),
        SamplingParams(0.7, top_k=8),
        SamplingParams(1.3, top_p=0.8),
        SamplingParams(1.0, top_k=5, top_p=0.9),
    ]
    return [
        Request(i, tuple(range(1 + i % 3, 4 + i % 5)), new_tokens - (i % 4), params[i % len(params)], seed)
        for i in range(n)
    ]


def make_engine(target, draft, *, policy="dspark", mode="standard", backend="torch", max_running=8, **pp):
    config = EngineConfig(
        gamma=4, policy=policy, policy_params=pp, mode=mode, backend=backend, max_running=max_running
    )
    drafter = ModelDrafter(draft, slots=max_running, max_len=96) if draft is not None else None
    return Engine(target, drafter, config, max_len=96)


def engine_rows(backend: str, *, quick: bool = False) -> Iterator[tuple]:
    target, trunc, other = tiny_models()
    reqs = mixed_requests(4 if quick else 6)
    plain = make_engine(target, None).generate(reqs, speculative=False)
    # every registered policy at its defaults (dspark, dspark_global first: --quick runs those two)
    first = ["dspark", "dspark_global"]
    policies = [(name, {}) for name in first + [n for n in specsched.POLICIES if n not in first]]
    policies.append(("fixed", {"k": 3}))
    n = same = 0
    for draft in (trunc, other):
        for name, pp in policies[: 2 if quick else None]:
            for max_running in (2, 8):
                out = make_engine(target, draft, policy=name, mode="coupled", max_running=max_running, **pp)
                n += 1
                same += out.generate(reqs) == plain
    yield Row(
        "coupled speculative == plain decoding (policies x drafts x batching)",
        n,
        same == n,
        f"{same}/{n} identical",
    )
    n = same = 0
    for mode, name, pp in (("standard", "fixed", {"k": 3}), ("coupled", "dspark", {})):
        batched = make_engine(target, trunc, policy=name, mode=mode, backend=backend, **pp).generate(reqs)
        for req in reqs[: 2 if quick else None]:
            alone = make_engine(target, trunc, policy=name, mode=mode, backend=backend, **pp).generate([req])
            n += 1
            same += alone[req.rid] == batched[req.rid]
    yield Row(f"seeded request: alone == in batch [{backend}]", n, same == n, f"{same}/{n} identical")
    ar = make_engine(target, trunc, policy="ar").generate(reqs)
    yield Row("policy 'ar' (standard mode) == plain decoding", len(reqs), ar == plain)


def error_rows(backend: str) -> Iterator[tuple]:
    gen = torch.Generator().manual_seed(5)
    errors = in_range = n = 0
    for what in ("nan-target", "zero-target", "nan-draft", "zero-draft"):
        inputs = random_verify_inputs(gen, 3, 2, 7)
        inputs["lengths"] = torch.tensor([2, 2, 2])
        key = "target_probs" if what.endswith("target") else "draft_probs"
        inputs[key][1, 1] = float("nan") if what.startswith("nan") else 0.0
        n += 1
        try:
            rejection_sample(**inputs, backend=backend)
        except ValueError as err:
            errors += key in str(err)
        tokens, _ = rejection_sample(**inputs, backend=backend, check=False)
        in_range += bool(((tokens == -1) | ((tokens >= 0) & (tokens < 7))).all())
    ok = errors == n and in_range == n
    yield Row(
        f"NaN/zero rows: clear ValueError; ids in range unchecked [{backend}]",
        n,
        ok,
        f"{errors} errors, {in_range} in range",
    )

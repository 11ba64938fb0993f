"""Hypothesis strategies shared by the engine tests (toy exact cases, cost tables, sampling params)."""

import numpy as np
from hypothesis import strategies as st

import specsched
from engine.proof.exact import DRAFT_KINDS, build_case
from engine.proof.suite import CONF_VALUES
from engine.sampling import SamplingParams


def weight_rows(vocab: int, max_rows: int):
    row = st.lists(st.integers(0, 3), min_size=vocab, max_size=vocab).filter(lambda w: sum(w) > 0)
    return st.lists(row, min_size=1, max_size=max_rows)


@st.composite
def sampling_params(draw, vocab: int):
    temperature = draw(st.sampled_from([0.0, 1.0, 0.5, 1 / 3]))
    top_k = draw(st.integers(0, vocab))
    top_p = draw(st.sampled_from([1.0, 0.9, 0.75, 0.5, 0.3]))
    return SamplingParams(temperature, top_k, top_p)


@st.composite
def toy_cases(draw, *, transforms: bool = False, max_vocab: int = 4, max_gamma: int = 3, max_length: int = 4):
    """V 2..4, γ 1..3, up to 4 tokens; bigger vocabularies get shorter horizons (enumeration cost)."""
    vocab = draw(st.integers(2, max_vocab))
    gamma = draw(st.integers(1, min(max_gamma, 3 if vocab <= 3 else 2)))
    length = draw(st.integers(1, min(max_length, 4 if vocab <= 3 else 3)))
    return build_case(
        draw(weight_rows(vocab, 4)),
        draw(st.sampled_from(DRAFT_KINDS)),
        draw(weight_rows(vocab, 3)),
        draw(st.lists(st.sampled_from(CONF_VALUES), min_size=1, max_size=3)),
        gamma=gamma,
        length=length,
        salt=draw(st.integers(0, 10_000)),
        params=draw(sampling_params(vocab)) if transforms else None,
    )


@st.composite
def cost_tables(draw, gamma: int, requests: int = 1):
    """Step latencies over B = 1 .. R(γ+1): flat, gentle and steep increments mixed."""
    size = requests * (gamma + 1)
    steps = draw(st.lists(st.sampled_from([0.0, 0.05, 0.3, 1.0]), min_size=size, max_size=size))
    return specsched.CostTable.from_points(np.arange(1, size + 1), 1.0 + np.cumsum(steps))

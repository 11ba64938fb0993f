"""tests/engine_lm set-up: one torch thread per xdist worker, and one tiny trained checkpoint directory per
worker (the `tiny` preset: a 2-layer d=32 target and 1-layer eagle/dflash/dspark drafters, a few steps)."""

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    from engine.lm.train import resolve, run

    out = tmp_path_factory.mktemp("ckpt")
    summary = run(resolve("tiny"), out, quiet=True)
    return out, summary


@pytest.fixture(scope="session")
def tiny_bundle(tiny_dir):
    from engine.lm.checkpoint import corpus_for, load_bundle

    bundle = load_bundle(tiny_dir[0])
    return bundle, corpus_for(bundle)

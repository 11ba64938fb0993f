"""Training: a tiny config lowers its losses in a few steps; training is deterministic (also with a reused
target); configs validate and round-trip through TOML."""

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from engine.lm import checkpoint as ckpt
from engine.lm.data import Corpus, DataConfig
from engine.lm.target import TargetLM, target_outputs
from engine.lm.train import PRESETS, TrainConfig, _optimizer, dump_toml, resolve
from specsched.io.errors import InputError

TINY = PRESETS["tiny"]


@pytest.fixture(scope="module")
def corpus():
    return Corpus.build(TINY.data)


def test_target_loss_falls(corpus):
    gen = torch.Generator().manual_seed(0)
    model = TargetLM(TINY.model_config(), gen)
    opt = _optimizer(model.parameters(), 3e-3)
    batch = corpus.batch("train", 4, TINY.context + 1, gen)
    losses = []
    for _ in range(25):
        logits, _ = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0


@pytest.mark.parametrize(
    "name,markov", [("eagle1", None), ("dflash1", None), ("dspark1", "vanilla"), ("dspark1", "rnn")]
)
def test_drafter_loss_falls(corpus, name, markov):
    gen = torch.Generator().manual_seed(1)
    mcfg = TINY.model_config()
    weights = TargetLM(mcfg, gen).weights()
    cfg = TINY if markov is None else dataclasses.replace(TINY, markov=markov)
    net = ckpt.build_drafter(cfg.draft_config(name), mcfg, weights, gen)
    opt = _optimizer(net.parameters(), 3e-3)
    batch = corpus.batch("train", 2, TINY.context, gen)
    probs, hidden = target_outputs(weights, mcfg, batch)
    losses = []
    for _ in range(20):
        loss, _ = net.loss(batch, probs, hidden, torch.Generator().manual_seed(2))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.95 * losses[0]


def test_training_is_deterministic_and_drafters_independent(tiny_dir, tmp_path):
    """Retraining with only dspark1 gives bit-identical target and dspark1 checkpoints."""
    from engine.lm.train import run

    first, _ = tiny_dir
    run(resolve("tiny", sets=["drafters=dspark1"]), tmp_path, quiet=True)
    a = torch.load(first / "target.pt", weights_only=True)["weights"]
    b = torch.load(tmp_path / "target.pt", weights_only=True)["weights"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    da = torch.load(first / "dspark1.pt", weights_only=True)
    db = torch.load(tmp_path / "dspark1.pt", weights_only=True)
    assert all(torch.equal(da["weights"][k], db["weights"][k]) for k in da["weights"])
    assert da["sts"] == db["sts"]


def test_reused_target_gives_the_same_drafters(tiny_dir, tmp_path):
    """--reuse-target skips the target phase and still gives bit-identical drafters; a target trained with
    other target settings is refused, naming the field."""
    from engine.lm.train import main, run

    first, _ = tiny_dir
    assert (
        main(
            [
                "--preset",
                "tiny",
                "--reuse-target",
                str(first),
                "--out",
                str(tmp_path / "a"),
                "--quiet",
                "--set",
                "drafters=dflash1",
            ]
        )
        == 0
    )
    a = torch.load(first / "dflash1.pt", weights_only=True)
    b = torch.load(tmp_path / "a" / "dflash1.pt", weights_only=True)
    assert a["target_digest"] == b["target_digest"]
    assert all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])
    assert ckpt.load_bundle(tmp_path / "a").names() == ["dflash1"]
    with pytest.raises(InputError, match="target_steps"):
        run(
            resolve("tiny", sets=["target_steps=13"]),
            tmp_path / "b",
            quiet=True,
            reuse_target=first / "target.pt",
        )
    with pytest.raises(InputError, match="missing target checkpoint"):
        run(resolve("tiny"), tmp_path / "c", quiet=True, reuse_target=tmp_path / "nowhere")


def test_tiny_run_summary(tiny_dir):
    _, summary = tiny_dir
    assert set(summary["sizes_bytes"]) == {"target.pt", "eagle1.pt", "dflash1.pt", "dspark1.pt"}
    assert summary["dspark1"]["temps"] is not None and len(summary["dspark1"]["temps"]) == TINY.gamma
    assert summary["eagle1"]["temps"] is None


def test_config_validation(tmp_path):
    with pytest.raises(ValueError, match="drafters"):
        TrainConfig(drafters=("medusa2",))
    with pytest.raises(ValueError, match="context"):
        TrainConfig(context=64)
    with pytest.raises(InputError, match="unknown key"):
        resolve("tiny", sets=["bogus=1"])
    cfg = tmp_path / "c.toml"
    cfg.write_text("[train]\ntarget_steps = 3\n[data]\nseed = 5\n")
    r = resolve("tiny", str(cfg), ["drafters=eagle1,dspark1"])
    assert r.target_steps == 3 and r.data.seed == 5 and r.drafters == ("eagle1", "dspark1")
    with pytest.raises(ValueError, match="code_bytes"):
        DataConfig(code_bytes=5)
    with pytest.raises(ValueError, match="markov"):
        TrainConfig(markov="lstm")
    r = resolve("tiny", sets=["markov=rnn", "conf_detach=true", "decay=3.0"])
    assert r.draft_config("dspark1").markov == "rnn" and r.draft_config("dflash1").markov == "none"
    assert r.draft_config("dspark1").conf_detach and r.draft_config("dflash1").decay == 3.0
    back = tmp_path / "back.toml"
    back.write_text(dump_toml(r))
    assert resolve("tiny", str(back)) == r

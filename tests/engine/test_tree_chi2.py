"""χ² of the real tree verifier (torch, and the Triton kernel: interpreter on CPU, so fewer trials) and its
control (soft draft rows handed in for deterministic top-k children) caught."""

import pytest
import torch

from engine.proof.tree_cases import CHILD_MODES
from engine.proof.tree_stats import SOFT_TOPK, tree_chi2


@pytest.mark.parametrize("mode", CHILD_MODES)
def test_torch_tree_verify_chi2(mode):
    worst, tested = tree_chi2(1, mode=mode, trials=4000)
    assert tested >= 3 and worst <= 1.0


def test_soft_topk_control_caught():
    worst, tested = tree_chi2(1, mode="topk", trials=4000, control=SOFT_TOPK)
    assert worst > 1.0


def test_triton_tree_verify_chi2():
    pytest.importorskip("triton")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    trials = 200_000 if device == "cuda" else 400
    worst, tested = tree_chi2(2, widths=(3, 1), trials=trials, backend="triton", device=device)
    assert tested >= 1 and worst <= 1.0

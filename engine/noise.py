"""Counter-based noise: uniforms and Exp(1) variates keyed by (seed, request, position, salt, index).

Role: every random draw of the decode loop comes from here, so a request's randomness is a pure function of
its key and never of the batch it runs in (no generator state is shared between requests). The hash works on
int64 tensors holding 32-bit words and multiplies only by constants below 2**27, so no product overflows
int64 and the result is the same on every device. Two 32-bit lanes give a 64-bit state: for a fixed input
word each absorb step is a bijection of the state, so distinct keys collide only with probability ~2**-64.

May import: torch, stdlib.
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF
_MUL = 0x45D9F3B  # odd multiplier < 2**27 (x < 2**32, so x * _MUL < 2**59: no int64 overflow)
_GOLD = 0x9E3779B9

# Salts name disjoint uses of the noise (never reuse one for two purposes: shared noise biases the output).
SALT_SAMPLE = 0  # target/plain sampling at an absolute position (shared with the draft in coupled mode)
SALT_RESIDUAL = 1  # residual/bonus exponentials of one verify step
SALT_ACCEPT = 2  # acceptance uniforms of one verify step (index = draft offset k)
SALT_DRAFT = 16  # draft sampling at offset k of one step uses SALT_DRAFT + k (standard mode)


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A bijection of [0, 2**32) with good avalanche (xorshift-multiply, three rounds)."""
    x = x ^ (x >> 16)
    x = (x * _MUL) & _M32
    x = x ^ (x >> 16)
    x = (x * _MUL) & _M32
    x = x ^ (x >> 16)
    return x


def _absorb(a: torch.Tensor, b: torch.Tensor, word: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    a = _mix32(a ^ (word & _M32))
    b = _mix32((b + a + _GOLD) & _M32)
    return a, b


def _as_words(value: int | torch.Tensor, device: torch.device) -> list[torch.Tensor]:
    """Split a non-negative integer (scalar or int64 tensor) into low and high 32-bit words."""
    t = torch.as_tensor(value, dtype=torch.int64, device=device)
    if bool((t < 0).any()):
        raise ValueError(f"noise keys must be non-negative integers, got {t.min().item()}")
    return [t & _M32, (t >> 32) & _M32]


def _bits53(seed, rid, pos, salt, n: int, device) -> torch.Tensor:
    """53 random bits per (key, index): int64 [N, n] for key tensors broadcast to [N]."""
    device = torch.device(device)
    words = []
    for part in (seed, rid, pos, salt):
        words += _as_words(part, device)
    shape = torch.broadcast_shapes(*(w.shape for w in words))
    a = torch.full(shape, 0x243F6A88, dtype=torch.int64, device=device)
    b = torch.full(shape, 0x85A308D3, dtype=torch.int64, device=device)
    for w in words:
        a, b = _absorb(a, b, w.expand(shape))
    idx = torch.arange(n, dtype=torch.int64, device=device)
    a, b = _absorb(a.unsqueeze(-1), b.unsqueeze(-1), idx)
    a, b = _absorb(a, b, torch.full_like(idx, 0x5BD1E995))  # one more round decorrelates the two lanes
    return (a << 21) | (b >> 11)


def keyed_uniforms(seed, rid, pos, salt, n: int, *, device="cpu") -> torch.Tensor:
    """float64 [N, n] uniforms on [0, 1) (multiples of 2**-53); keys are ints or int64 tensors [N]."""
    return _bits53(seed, rid, pos, salt, n, device).to(torch.float64) * 2.0**-53


def keyed_exponentials(seed, rid, pos, salt, n: int, *, device="cpu") -> torch.Tensor:
    """float64 [N, n] Exp(1) variates, all finite and > 0 (from uniforms on the open interval (0, 1))."""
    u = (_bits53(seed, rid, pos, salt, n, device).to(torch.float64) + 0.5) * 2.0**-53
    return -torch.log(u)

"""tests/engine set-up: one torch thread per xdist worker; the Triton interpreter on CPU-only machines
(it must be chosen before triton is first imported in the worker)."""

import os

import torch

torch.set_num_threads(1)
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

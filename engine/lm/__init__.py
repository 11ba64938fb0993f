"""specbed's own small language models: offline data, the byte-level target, EAGLE / DFlash / DSpark
drafters, their training and checkpoints (issue 7). Imports torch, numpy, stdlib, specsched, engine.*."""

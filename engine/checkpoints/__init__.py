"""Committed checkpoints of specbed's byte-level target and drafters (see README.md; made by
`python -m engine.lm.train --out engine/checkpoints`). A package only so that the *.pt files ship."""

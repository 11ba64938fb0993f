"""Workspaces of the CLI fuzz cases: files, folders, special files (FIFOs, device links) and hand-edits of a
finished run, and a snapshot that never opens a special file (reading a FIFO would block)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path


def materialize(root: Path, name: str, data: bytes) -> None:
    """Create workspace entry `name`: a folder ("x/"), a FIFO / link marker (tests.fuzz.generated), a
    `@summary` edit of run/summary.json (b"key=raw JSON"), or a file holding `data`."""
    if name == "@summary":
        key, _, literal = data.decode().partition("=")
        path = root / "run" / "summary.json"
        doc = json.loads(path.read_text())
        doc[key] = "@@"
        path.write_bytes(json.dumps(doc).encode().replace(b'"@@"', literal.encode()))
        return
    path = root / name
    if name.endswith("/"):
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if data == b"\0@fifo":
        os.mkfifo(path)
    elif data == b"\0@fifolink":
        os.mkfifo(path.with_name(path.name + ".fifo"))
        os.symlink(path.with_name(path.name + ".fifo"), path)
    elif data.startswith(b"\0@link:"):
        os.symlink(data[len(b"\0@link:") :].decode(), path)
    else:
        path.write_bytes(data)


def build(root: Path, files: dict[str, bytes], done: Path | None, run: Path | None = None) -> Path:
    """The workspace: `done` (a finished sweep) and `run` (a finished run) copied in when given."""
    root.mkdir(parents=True, exist_ok=True)
    if done is not None:
        shutil.copytree(done, root / "done")
    if run is not None:
        shutil.copytree(run, root / "run")
    for name, data in files.items():
        materialize(root, name, data)
    return root


def snapshot(root: Path) -> dict[str, str]:
    """{relative path: sha256 (regular files), 'dir', or a special file's kind} of everything under root."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link " + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = f"special {path.lstat().st_mode:o}"
    return out

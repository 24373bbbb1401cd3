"""Files written atomically: whole or not at all, and on disk before they count.

Everything the driver writes that a crash must not tear (checkpoints, the saved replay,
trajectory files, ``summary.json``) goes through :func:`atomic_write`: the data is written
to a temporary file in the same folder, flushed and fsynced, then renamed over the target.
A run killed mid-write (even with SIGKILL) leaves the previous file intact and at worst a
stray ``.<name>.*.tmp`` file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a binary file that becomes ``path`` only once it is complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(data: bytes, path: Path) -> None:
    atomic_write(path, lambda f: f.write(data))


def atomic_write_text(text: str, path: Path) -> None:
    atomic_write_bytes(text.encode("utf-8"), path)

"""Keeps Python's cyclic garbage collector off the objects a process starts with."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Move every object allocated so far out of the garbage collector's sight.

    torch, Ray and gymnasium leave some 300,000 long-lived objects behind at import. Every
    full collection walks all of them (about 0.1 s on a 2-core machine, several times in a
    short run) and the interpreter walks them once more at exit (0.4-0.8 s). Frozen, they
    are walked never again; what a role allocates later is collected as before. Called by
    each role once it is set up, by the driver once its roles are, and before the command
    line exits.
    """
    gc.freeze()


def thaw_heap() -> None:
    """Give the collector back what was frozen: a run that ends in a process that goes on
    (a sweep calling ``runner.run`` in a loop) leaves no frozen garbage behind."""
    gc.unfreeze()

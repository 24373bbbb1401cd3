"""The one error type of ``envs``: the CLI turns it into ``error: <message>`` and exit code 2."""

from __future__ import annotations


class EnvSpecError(ValueError):
    """The configured env cannot be built; the message says why and what is allowed."""


def one_line(exc: BaseException) -> str:
    """An exception's text on one line (gymnasium's messages sometimes span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__

"""The one error every cluster check raises: the cluster cannot be reached or cannot hold
the run. Its own module, so that the session (:mod:`.ray_cluster`) and the version check
(:mod:`.ray_version`) both import it without importing each other."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster cannot be reached or cannot hold the run; the message says which."""

"""Process isolation, as mechanics only (after Apache Tika's pipes): each document parsed in a
forked child within limits. No format is named here: what a kind needs, the registry says.

- client.py: the parent's side (IsolatedPartitioner, run_isolated, warm_up): runs a target in a
  child and turns its reply, or its end, into the value or a DecodeError with the parse's stats;
- pool.py: reusable children, each decoding documents one after another;
- children.py: forking one at a time, watching a child (exited, stalled), reaping it;
- server.py: the child's side: the checks, the target within its budget, the reply;
- child.py: what a child changes about itself: signals, thread pools, its limits;
- protocol.py: the wire: length-prefixed pickles over a pipe.
"""

from .children import ChildStalled
from .client import (
    IsolatedPartitioner,
    close_workers,
    default_partitioner,
    isolation_available,
    isolation_enabled,
    reap_children,
    run_isolated,
    warm_up,
)

__all__ = [
    "ChildStalled",
    "IsolatedPartitioner",
    "close_workers",
    "default_partitioner",
    "isolation_available",
    "isolation_enabled",
    "reap_children",
    "run_isolated",
    "warm_up",
]

"""Is the process that claimed a batch still alive? Pure functions (no Django), used by the work
claims of scoring.services.claims.

A claim records where its process runs (`host_key`: the host name and, on Linux, the PID
namespace, because a PID means something only inside its namespace: two containers can share a
host name or a PID) and its PID, and a heartbeat the process refreshes while it works. A claim
is dead when:

- its process runs where we run (same host key) and that PID is gone or a zombie: known at once;
- or its heartbeat is older than `stale_after_s`: the only sign left when the process runs in
  another container or on another machine (a hung process is treated as dead, too).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import lru_cache


@lru_cache(maxsize=1)
def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")  # e.g. "pid:[4026531836]"
    except OSError:  # not Linux: one namespace per host
        return ""


def current_host_key() -> str:
    """Where a PID of this process means something: host name plus PID namespace."""
    namespace = _pid_namespace()
    return f"{socket.gethostname()}/{namespace}" if namespace else socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether `pid` is a running process here (a zombie, killed but not reaped, is not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parens)
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): kill(pid, 0) is all we know
    return state not in ("Z", "X")


@dataclass(frozen=True)
class ClaimHolder:
    """Where a claim's process runs, and how long ago it last said it was working."""

    host_key: str
    pid: int
    heartbeat_age_s: float


def claim_is_dead(holder: ClaimHolder, *, here: str, stale_after_s: float) -> bool:
    """Whether the process that holds a claim is gone (module docstring). `here`: our host key."""
    if holder.heartbeat_age_s > stale_after_s:
        return True
    return holder.host_key == here and not process_alive(holder.pid)

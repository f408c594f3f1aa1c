"""One writer per run: a lease row in the run store names the process that is writing a run.

A lease is held from `RunStore.start_run` (or `claim`) until the run's judgments are done (`release`, `close`). It is
stale, and the next writer takes it over, when its holder is gone: on the same host, when the holder's process no
longer exists (a kill -9 leaves the row behind, but not the process; the process start time guards against a reused
pid); on another host (a store on a shared volume), when the holder has not renewed its heartbeat for `TTL` seconds.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY, token TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, proc_start TEXT,
    acquired REAL NOT NULL, heartbeat REAL NOT NULL
);
"""
HEARTBEAT = 10.0  # seconds between renewals of the leases a store holds
TTL = 60.0  # a lease from another host whose heartbeat is older than this is stale
COLUMNS = ("token", "host", "pid", "proc_start", "acquired", "heartbeat")


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) from /proc, or None where there is no /proc (macOS, Windows)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name may hold spaces and parentheses
    return (fields[0], fields[19]) if len(fields) > 19 else None


def process_alive(pid: int, proc_start: str | None = None) -> bool:
    """Whether process `pid` of this host still runs (a zombie or a reused pid does not count)."""
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT: rely on the heartbeat there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, started = stat
    return state != "Z" and (not proc_start or started == proc_start)


@dataclass(frozen=True)
class Holder:
    """The process holding a run's lease, as recorded in the `leases` table."""

    token: str
    host: str
    pid: int
    proc_start: str | None
    acquired: float
    heartbeat: float

    @classmethod
    def this_process(cls, token: str) -> "Holder":
        """A holder for the current process with `token`, acquired and heartbeat now."""
        now = time.time()
        stat = _proc_stat(os.getpid())
        return cls(token, socket.gethostname(), os.getpid(), stat[1] if stat else None, now, now)

    def values(self) -> tuple:
        """The holder's fields in COLUMNS order, as stored in the lease table."""
        return tuple(getattr(self, name) for name in COLUMNS)

    def is_stale(self, now: float, ttl: float = TTL) -> bool:
        """Whether the lease can be taken over: on this host, its process is gone; elsewhere, no heartbeat for `ttl`
        seconds."""
        if self.host == socket.gethostname():
            return not process_alive(self.pid, self.proc_start)
        return now - self.heartbeat > ttl

    def describe(self, now: float) -> str:
        """One line for messages: pid, host, since when, and how long ago the last heartbeat was."""
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.acquired))
        beat = max(0.0, now - self.heartbeat)
        return f"pid {self.pid} on {self.host} (since {started}, last heartbeat {beat:.0f} s ago)"

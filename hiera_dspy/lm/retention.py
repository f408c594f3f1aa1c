"""What DSPy keeps of every LM call during a judging run: its last `HISTORY_ENTRIES` calls, not its last 10,000.

DSPy 3.4 keeps three sliding windows of every call, each up to 10,000 entries by default: `GLOBAL_HISTORY` (module
constant `MAX_HISTORY_SIZE`), each LM's and each calling module's `history` (`settings.max_history_size`), and
`settings.trace` (`settings.max_trace_size`: the module, its inputs and its Prediction). Over an HTTP endpoint a
history entry holds the request's messages and the provider's response object (~17 kB for a zero-shot MSRD prompt),
so the windows alone reach a few hundred MB by 10,000 calls; a long run then churns them entry by entry, which the
allocator does not give back to the OS (peak RSS 612 MB at 10k pairs, 931 MB at 100k over a loopback server).
hiera never reads them: its own record of each call is the judgment's step trace in the run store.

`bounded()` wraps one judgment (every engine's `judge_one`): inside it DSPy's per-LM and per-module history and its
trace keep at most `HISTORY_ENTRIES` entries (thread-local settings, so a user's own `dspy.configure` is untouched),
and on the way out `GLOBAL_HISTORY`, which has no setting, is cut to its last `HISTORY_ENTRIES`. `lm.history[-1]`
and `dspy.inspect_history()` still show the latest calls. tests/reliability/test_dspy_history.py fails, naming the
attribute, if a DSPy upgrade moves `GLOBAL_HISTORY`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dspy
from dspy.clients import base_lm

HISTORY_ENTRIES = 100  # LM calls kept in each of DSPy's histories and its trace while judging (DSPy's default 10,000)


@contextmanager
def bounded() -> Iterator[None]:
    """Judge within: DSPy's histories and trace keep at most HISTORY_ENTRIES entries (see the module doc)."""
    try:
        with dspy.context(max_history_size=HISTORY_ENTRIES, max_trace_size=HISTORY_ENTRIES):
            yield
    finally:
        trim_global_history()


def trim_global_history(keep: int = HISTORY_ENTRIES) -> None:
    """Cut DSPy's process-wide `GLOBAL_HISTORY` to its newest `keep` entries (a single slice deletion: other threads
    may append meanwhile, the list stays consistent)."""
    history = base_lm.GLOBAL_HISTORY
    excess = len(history) - keep
    if excess > 0:
        del history[:excess]

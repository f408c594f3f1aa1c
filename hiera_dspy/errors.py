"""The one error family the library raises for a caller's input or setup (an artifact, a key variable, a method name).

The library never exits the process: it raises `HieraError` (a `ValueError`) with a one-line message naming what and
where; the command-line tools turn it into `error: ...` on stderr and exit status 2 (`hiera_dspy.cli.options.cli_main`),
or the status the error names (`exit_status`: `CommandError` 1, an unreachable endpoint or a failed store write 3).
"""

from __future__ import annotations


class HieraError(ValueError):
    """A problem with the caller's input or setup; the message is one line naming the file, field or flag."""


class CommandError(HieraError):
    """A request a command cannot carry out as given (a flag combination, an engine's missing requirement, a moved
    output folder, a run of another kind): the CLIs print `error: MESSAGE` and exit with status 1."""

    exit_status = 1

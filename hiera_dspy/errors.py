"""The one error family of the library: every exception class it defines derives from `HieraError`
(tests/test_errors.py walks them all).

The library never exits the process: it raises a `HieraError` with a one-line message naming what and where; the
command-line tools (`hiera_dspy.cli`, the one converter) print it as `error: ...` on stderr and exit with the error's
`exit_status`: 2 for a caller's input or setup (an artifact, a key variable, an unknown name), 1 for a request that
cannot be carried out as given (`RequestError`), 3 for an unreachable endpoint or a failed store write. A subclass
also derives from the builtin its callers catch (`ValueError` through `HieraError`, `KeyError` for an unknown name,
`RuntimeError`, `OSError`), so catching the builtin still works.
"""

from __future__ import annotations


class HieraError(ValueError):
    """A problem with the caller's input or setup; the message is one line naming the file, field or flag."""

    exit_status = 2


class RequestError(HieraError):
    """A request that cannot be carried out as given (a combination of options, an engine's missing requirement, a
    moved output folder, a run of another kind): the commands print `error: MESSAGE` and exit with status 1."""

    exit_status = 1


class UnknownName(HieraError, KeyError):
    """A name that no registry holds (a method, a label scheme, an engine, a dataset kind); the message lists the
    names there are. Also a `KeyError`, for callers that look a name up."""

    __str__ = Exception.__str__  # the message as written, not KeyError's quoted repr


class NotFitted(RequestError, RuntimeError):
    """A learned part asked to judge or be saved before it learned anything: fit it (a method's `prepare(train,
    dev)`, which the commands call), or load a compiled artifact. Also a `RuntimeError`."""

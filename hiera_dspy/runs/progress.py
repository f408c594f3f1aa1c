"""How a judging run shows its progress: one bar on a terminal, a line every 10 s or every 5% in a log.

Every engine reports each finished judgment to one `Progress` (`runner.run_pairs`, `engines.*`). On a terminal it is
a tqdm bar; without one (CI, a log file) it prints a plain line when 10 s have passed since the last line or a new 5%
of the run is done, and one at the end. Both say done/total, judgments per second, ETA, errors so far, tokens so far
and, when every role's model has a price in LiteLLM's local map, the cost so far. The one line per judgment of
earlier versions is `Display(verbose=True)` (`--verbose` on every CLI that judges).

Example:
    >>> report = Progress(total=300, finished=0, enabled=Display(desc="hiera", verbose=True))
    >>> report(row)   # for every finished judgment, from any thread
    >>> report.close()
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from hiera_dspy import settings
from hiera_dspy.records import Judgment

LINE_SECONDS = 10.0  # without a terminal: a line at least this often while judgments finish ...
LINE_SHARE = 0.05  # ... and one whenever another 5% of the run is done


@dataclass
class Display:
    """How to show a run's progress (a truthy value for an engine's `progress` flag).

    `desc` names the run on the bar; `verbose` adds one line per judgment; `prices` maps an LM role to its USD per
    input and output token (`{"input": .., "output": ..}`), or is a function returning that map, called at the first
    judgment (a price look-up imports LiteLLM: not before the run's first requests); the cost is shown only when every
    step's role is priced.
    `stream` defaults to stderr, `tty` to whether it is a terminal (log lines under $HIERA_NO_PROGRESS); `clock` is
    for tests."""

    desc: str = ""
    verbose: bool = False
    prices: dict[str, dict[str, float]] | Callable[[], dict[str, dict[str, float]]] = field(default_factory=dict)
    stream: TextIO | None = None
    tty: bool | None = None
    clock: Callable[[], float] = time.monotonic


class Progress:
    """Progress of one run: call it with every finished judgment (thread-safe), `close()` at the end.

    `enabled` is False (silent), True (the default display) or a `Display`."""

    def __init__(self, total: int, finished: int, enabled: bool | Display = True):
        self.total, self.finished = total, finished
        self.enabled = bool(enabled)
        self.display = enabled if isinstance(enabled, Display) else Display()
        self.stream = self.display.stream or sys.stderr
        self.errors, self.tokens, self.cost = 0, 0, None
        self._prices: dict[str, dict[str, float]] | None = None  # resolved at the first judgment
        self._start_done, self._start = finished, self.display.clock()
        self._last_line, self._last_share, self._shown = self._start, self._share(), finished
        self._lock = threading.Lock()
        self._closed = False
        tty = self.display.tty if self.display.tty is not None else _isatty(self.stream) and settings.show_progress()
        self._bar = _bar(self) if self.enabled and tty and total > finished else None

    def __call__(self, row: Judgment) -> None:
        """Count one finished judgment and show it (a bar update, a due log line, its own line with --verbose)."""
        with self._lock:
            self.finished += 1
            self.errors += bool(row.error)
            self.tokens += row.tokens or 0
            if self._prices is None:
                self._prices = self._resolve_prices()
                self.cost = 0.0 if self._prices else None
            self.cost = _add_cost(self.cost, row, self._prices)
            if not self.enabled:
                return
            if self.display.verbose:
                mark = "error" if row.error else (row.label or "escalated")
                self._write(f"[{self.finished}/{self.total}] {row.id}: {mark} ({(row.seconds or 0):.1f}s)")
            if self._bar is not None:
                self._bar.set_postfix_str(self.postfix(), refresh=False)
                self._bar.update(1)
            elif self._line_due():
                self._write(self.line())
            if self.finished >= self.total:
                self._close()

    def close(self) -> None:
        """End the display: close the bar, or print the final log line if the last one is not it."""
        with self._lock:
            self._close()

    # --- what is shown ----------------------------------------------------------------------------------------------
    def postfix(self) -> str:
        """errors, tokens and (where known) cost so far: the bar's tail and the log line's end."""
        parts = [f"errors {self.errors}", f"tokens {self.tokens:,}"]
        if self.cost is not None:
            parts.append(f"cost ${self.cost:,.2f}")
        return ", ".join(parts)

    def line(self) -> str:
        """The log line: `desc: done/total (share) rate, ETA, elapsed, errors, tokens[, cost]`."""
        elapsed = self.display.clock() - self._start
        new = self.finished - self._start_done
        rate = new / elapsed if elapsed > 0 else None
        left = self.total - self.finished
        eta = _clock(left / rate) if rate else "?"
        share = f"{self.finished / self.total:.0%}" if self.total else "-"
        speed = f"{rate:.2f} judgments/s" if rate else "? judgments/s"
        head = f"{self.display.desc}: " if self.display.desc else ""
        return (f"{head}{self.finished}/{self.total} ({share}) {speed}, ETA {eta}, elapsed {_clock(elapsed)}, "
                f"{self.postfix()}")

    # --- internals ------------------------------------------------------------------------------------------------
    def _share(self) -> int:
        return int(self.finished / self.total / LINE_SHARE) if self.total else 0

    def _resolve_prices(self) -> dict[str, dict[str, float]]:
        prices = self.display.prices
        return dict((prices() if callable(prices) else prices) or {})

    def _line_due(self) -> bool:
        now, share = self.display.clock(), self._share()
        if now - self._last_line >= LINE_SECONDS or share > self._last_share or self.finished >= self.total:
            self._last_line, self._last_share, self._shown = now, share, self.finished
            return True
        return False

    def _write(self, text: str) -> None:
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def _close(self) -> None:
        if self._closed or not self.enabled:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.set_postfix_str(self.postfix(), refresh=False)
            self._bar.close()
        elif self.finished > self._start_done and self._shown != self.finished:  # the last count, once
            self._write(self.line())


def _bar(progress: Progress) -> Any:
    from tqdm import tqdm

    width = _columns(progress.stream)  # a terminal that reports no width (0 columns) gets a fixed 100
    return tqdm(total=progress.total, initial=progress.finished, desc=progress.display.desc or None,
                unit=" judgments", file=progress.stream, dynamic_ncols=bool(width), ncols=None if width else 100,
                mininterval=0.5, postfix=progress.postfix(), leave=True)


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}"


def _add_cost(cost: float | None, row: Judgment, prices: dict[str, dict[str, float]]) -> float | None:
    """`cost` plus the row's USD at `prices` (None once a step's role has no price: the cost is not known)."""
    if cost is None:
        return None
    for step in row.steps:
        if not step.calls:
            continue
        price = prices.get(step.role)
        if price is None:
            return None
        cost += step.prompt_tokens * price["input"] + step.completion_tokens * price["output"]
    return cost


"""The type checker's baseline may only shrink: run mypy on the library and compare its errors per file with the
recorded counts (.ci/mypy-baseline.txt, `FILE COUNT` a line). A file with more errors than recorded fails; a file with
fewer is reported with the command that records the gain (`python .ci/mypy_baseline.py --write`).

    python .ci/mypy_baseline.py            # check (CI)
    python .ci/mypy_baseline.py --write    # record today's counts (only after fixing errors)
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+: error:")


def counts() -> Counter:
    """Errors per file of `mypy hiera_dspy` (the settings in pyproject.toml)."""
    out = subprocess.run([sys.executable, "-m", "mypy", "hiera_dspy"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode not in (0, 1) or "error: " not in out.stdout and out.returncode:
        sys.exit(f"mypy did not run: {out.stderr.strip() or out.stdout.strip()}")
    return Counter(m["file"] for line in out.stdout.splitlines() if (m := ERROR.match(line)))


def read() -> Counter:
    """The recorded counts."""
    pairs = (line.rsplit(maxsplit=1) for line in BASELINE.read_text().splitlines() if line.strip())
    return Counter({file: int(n) for file, n in pairs})


def main(argv: list[str]) -> int:
    now = counts()
    if "--write" in argv:
        BASELINE.write_text("".join(f"{file} {n}\n" for file, n in sorted(now.items())))
        print(f"recorded {sum(now.values())} errors in {len(now)} files")
        return 0
    before = read()
    worse = {f: (before.get(f, 0), n) for f, n in now.items() if n > before.get(f, 0)}
    better = {f: (n, now.get(f, 0)) for f, n in before.items() if now.get(f, 0) < n}
    for f, (was, is_) in sorted(worse.items()):
        print(f"{f}: {is_} type errors, the baseline allows {was}: fix the new ones (mypy {f})")
    if better and not worse:
        print(f"{len(better)} files have fewer type errors than recorded: python .ci/mypy_baseline.py --write")
    print(f"mypy: {sum(now.values())} errors (baseline {sum(before.values())})")
    return 1 if worse else 0  # fewer errors pass (a type checker of another minor version may find fewer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

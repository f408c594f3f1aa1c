"""eval.label at scale: wall time, time per 1k pairs, peak RSS (from the OS), store size and stderr lines, offline.

    python -m bench.scale label --pairs 10000 100000            # zero-shot, loopback server, --threads 32
    python -m bench.scale label --pairs 1000000                 # a million pairs over the loopback server (~2 h here)
    python -m bench.scale label --pairs 100000 --method hiera   # HIERA (every triage unclear: it always delegates)
    python -m bench.scale resume --pairs 1000000 --real 20000   # a finished 1M run: seed the store, time the resume
    python -m bench.scale kill --pairs 100000 --backend fake    # SIGKILLed 6 times, resumed: every pair exactly once
    python -m bench.scale table                                 # bench/results/scale.jsonl -> bench/results/scale.md

Pairs are synthetic and unlabelled: real MSRD queries (the bundled train and dev files) x random catalog movies
(seed 0). Each measurement runs `python -m eval.label` in a fresh process under `/usr/bin/time -v` (peak RSS is the
kernel's maximum resident set size; the process's RSS is also sampled every 2 s, and the peak of each tenth of the
run's wall time recorded, so growth within one run shows), against an OpenAI-compatible loopback server in its own process
(tests/fault_server.py, no latency, no faults; `--backend fake` uses the in-process fake LM instead). The store,
caches and outputs live in a scratch folder (`--scratch`, default /tmp/hiera-scale), never in the repository; one
JSON line per measurement is appended to bench/results/scale.jsonl. `resume` judges the first `--real` pairs for real,
copies their rows (new ids and positions) for the rest of the split straight into the store, then times eval.label
on the whole split twice: first every pair is found done and the exports run (`resume+export`), then the export is
found up to date (`resume-finished`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "scale.jsonl"
TABLE = ROOT / "bench" / "results" / "scale.md"
SAMPLE_S = 2.0  # seconds between RSS samples of the measured process
HIERA_ANSWERS = {"query_interpretability": "unclear"}  # hiera then always delegates (all four agents run)


def make_pairs(n: int, scratch: Path) -> Path:
    """n synthetic unlabelled pairs (MSRD queries x random catalog movies, seed 0), written once per n."""
    path = scratch / f"pairs-{n}.jsonl"
    if path.is_file():
        return path
    from hiera_dspy.data.msrd_sample import BUNDLED, read_catalog

    queries = sorted({json.loads(line)["query"] for name in ("train.jsonl", "dev.jsonl")
                      for line in (BUNDLED / name).read_text(encoding="utf-8").splitlines() if line.strip()})
    catalog = read_catalog(BUNDLED / "movies-corpus.jsonl.gz")
    rng = random.Random(0)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for i in range(n):
            q, movie = rng.randrange(len(queries)), catalog[rng.randrange(len(catalog))]
            fh.write(json.dumps({"id": f"p{i}", "query": queries[q], "item_title": movie.title,
                                 "item_text": movie.text, "query_id": f"q{q}", "item_id": movie.id}) + "\n")
    tmp.rename(path)
    return path


class Loopback:
    """tests/fault_server.py in its own process (it must not share eval.label's GIL or RSS)."""

    def __init__(self, answers: dict):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fault_server.py"), "--latency", "0",
                                      "--answers", json.dumps(answers)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"loopback server did not start: {line!r}")
        self.url = line.split()[1]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def label_command(pairs: Path, out: Path, method: str, threads: int, backend: str, url: str | None,
                  extra: list[str]) -> list[str]:
    """The eval.label command line of one measurement."""
    argv = ["--dataset", f"jsonl:{pairs}", "--scheme", "msrd", "--method", method, "--threads", str(threads),
            "--knowledge", "none", "--out", str(out), "--run-id", out.name, *extra]
    if backend == "loopback":
        return [sys.executable, "-m", "eval.label", *argv, "--lm", "openai/bench", "--api-base", url]
    answers = json.dumps(HIERA_ANSWERS if method == "hiera" else {})
    return [sys.executable, "-m", "bench.scale", "_fake", answers, *argv, "--lm", "openai/bench"]


def rss_mb(pid: int) -> float | None:
    """The resident set size of process `pid` now, MB (None once it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def child_of(pid: int) -> int | None:
    """The first child process of `pid` (the command /usr/bin/time runs), or None."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def tenths(samples: list[tuple[float, float]]) -> list[int]:
    """The peak RSS MB of each tenth of the run's wall time, from (seconds, MB) samples."""
    if not samples:
        return []
    end = samples[-1][0] or 1.0
    peaks = [0.0] * 10
    for t, mb in samples:
        k = min(9, int(t / end * 10))
        peaks[k] = max(peaks[k], mb)
    for k in range(1, 10):  # a tenth without a sample (a short run): the RSS it started with
        peaks[k] = peaks[k] or peaks[k - 1]
    return [round(p) for p in peaks]


def measure(command: list[str], scratch: Path, tag: str) -> dict:
    """Run `command` under /usr/bin/time -v; wall seconds, peak RSS MB (the OS's) and the peak of each tenth of the
    wall time (sampled every SAMPLE_S), stderr lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIERA_RUNS_DIR": str(scratch / "runs"),
           "HIERA_CACHE_DIR": str(scratch / "cache")}
    err = scratch / f"{tag}.stderr"
    start = time.perf_counter()
    samples: list[tuple[float, float]] = []
    with open(err, "w") as fh:
        proc = subprocess.Popen(["/usr/bin/time", "-v", *command], stdout=subprocess.DEVNULL, stderr=fh, cwd=ROOT,
                                env=env)
        child = None
        while proc.poll() is None:
            child = child or child_of(proc.pid)
            mb = rss_mb(child) if child else None
            if mb is not None:
                samples.append((time.perf_counter() - start, mb))
            try:
                proc.wait(SAMPLE_S)
            except subprocess.TimeoutExpired:
                pass
        code = proc.returncode
    wall = time.perf_counter() - start
    text = err.read_text(errors="replace")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", text))
    lines = text.split("\tCommand being timed", 1)[0].count("\n")
    if code:
        raise SystemExit(f"{tag}: exit {code}; see {err}")
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(int(rss.group(1)) / 1024) if rss else None,
            "rss_mb_by_tenth": tenths(samples), "stderr_lines": lines, "cpu_s": round(cpu, 1)}


PROGRESS = re.compile(r"(\d+)/(\d+) \(\d+%\).*elapsed (\d+):(\d\d):(\d\d)")


def windows(stderr: Path) -> dict:
    """Seconds per 1k pairs in the first and the last tenth of the run, from its progress lines (pairs done, elapsed):
    the flatness of the time per pair within one run, free of start-up cost and of other runs' load."""
    points = []
    for line in stderr.read_text(errors="replace").splitlines():
        m = PROGRESS.search(line)
        if m:
            done, total, h, mi, se = map(int, m.groups())
            points.append((done, total, h * 3600 + mi * 60 + se))
    if len(points) < 4:
        return {}
    total = points[-1][1]

    def rate(lo: float, hi: float) -> float | None:
        inside = [p for p in points if lo * total <= p[0] <= hi * total]
        if len(inside) < 2 or inside[-1][0] == inside[0][0]:
            return None
        return round((inside[-1][2] - inside[0][2]) / (inside[-1][0] - inside[0][0]) * 1000, 2)

    return {"s_per_1k_first_tenth": rate(0.0, 0.1), "s_per_1k_last_tenth": rate(0.9, 1.0)}


def store_mb(scratch: Path) -> float:
    """The run store's size on disk (database + WAL), MB."""
    return round(sum(p.stat().st_size for p in (scratch / "runs").glob("store.sqlite*")) / 2**20, 1)


def row_bytes(scratch: Path, run_id: str) -> int | None:
    """Mean bytes of a stored row of the run (its columns as stored: the step trace compressed)."""
    with sqlite3.connect(scratch / "runs" / "store.sqlite") as db:
        n, size = db.execute("SELECT count(*), sum(length(pair_id) + length(fields) + length(steps) + "
                             "length(tokens_by_role) + coalesce(length(label), 0) + 60) FROM judgments "
                             "WHERE run_id=?", (run_id,)).fetchone()
    return round(size / n) if n else None


def commit() -> str:
    """The checkout's commit (short), `+` when the measured code (hiera_dspy/, eval/, this file) has changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", "hiera_dspy", "eval", "bench/scale.py")
    return git("rev-parse", "--short", "HEAD") + ("+" if changed else "")


def record(result: dict, measured: str | None = None) -> dict:
    """Append one measurement (with the commit it measured: `measured`, read when it started, or the checkout's now)
    to bench/results/scale.jsonl and print it."""
    result = {**result, "commit": measured or commit()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with open(RESULTS, "a") as fh:
        fh.write(json.dumps(result) + "\n")
    print(json.dumps(result), flush=True)
    return result


def label(args) -> None:
    """Fresh eval.label runs, one per --pairs value."""
    server = Loopback(HIERA_ANSWERS if args.method == "hiera" else {}) if args.backend == "loopback" else None
    try:
        for n in args.pairs:
            pairs = make_pairs(n, args.scratch)
            measured = commit()  # a long run's code is the checkout's when it starts, not when it ends
            tag = f"{args.method}-{n}-{int(time.time())}"
            out = args.scratch / tag
            command = label_command(pairs, out, args.method, args.threads, args.backend, server and server.url, [])
            result = measure(command, args.scratch, tag)
            record({"kind": "label", "method": args.method, "pairs": n, "backend": args.backend,
                    "threads": args.threads, **result, "s_per_1k": round(result["wall_s"] / n * 1000, 2),
                    "cpu_s_per_1k": round(result["cpu_s"] / n * 1000, 2), **windows(args.scratch / f"{tag}.stderr"),
                    "store_mb": store_mb(args.scratch), "row_bytes": row_bytes(args.scratch, tag),
                    "load": os.getloadavg()[0], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, measured)
            if args.again:  # the same command on the finished run: every pair found done, the export up to date
                again = measure(command, args.scratch, tag + "-again")
                record({"kind": "resume-finished", "method": args.method, "pairs": n, "backend": args.backend,
                        **again, "store_mb": store_mb(args.scratch), "load": os.getloadavg()[0],
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    finally:
        if server:
            server.close()


def resume(args) -> None:
    """A finished run of --pairs: judge --real pairs, copy their rows for the rest, time the resume."""
    n = args.pairs[0]
    pairs = make_pairs(n, args.scratch)
    tag = f"resume-{args.method}-{n}-{int(time.time())}"
    out = args.scratch / tag
    server = Loopback(HIERA_ANSWERS if args.method == "hiera" else {}) if args.backend == "loopback" else None
    try:
        command = label_command(pairs, out, args.method, args.threads, args.backend, server and server.url, [])
        first = measure([*command, "--limit", str(args.real)], args.scratch, tag + "-real")
    finally:
        if server:
            server.close()
    start = time.perf_counter()
    fill(args.scratch / "runs" / "store.sqlite", tag, args.real, n)
    filled = round(time.perf_counter() - start, 1)
    # the first resume finds every pair done and exports; the second finds the export up to date
    for kind, name in (("resume+export", tag), ("resume-finished", tag + "-again")):
        result = measure(command, args.scratch, name)  # no server: nothing is left to send
        record({"kind": kind, "method": args.method, "pairs": n, "real_pairs": args.real, "backend": args.backend,
                "real_wall_s": first["wall_s"], "fill_s": filled, **result, "store_mb": store_mb(args.scratch),
                "row_bytes": row_bytes(args.scratch, tag), "load": os.getloadavg()[0],
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def kill(args) -> None:
    """A fresh run killed with SIGKILL --kills times at random moments (judging or exporting), then run to the end:
    every pair exactly once in the store and in labels.jsonl, no finished row judged again."""
    import signal

    n, rng = args.pairs[0], random.Random(args.seed)
    pairs = make_pairs(n, args.scratch)
    tag = f"kill-{args.method}-{n}-{int(time.time())}"
    out, store = args.scratch / tag, args.scratch / "runs" / "store.sqlite"
    server = Loopback(HIERA_ANSWERS if args.method == "hiera" else {}) if args.backend == "loopback" else None
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HIERA_RUNS_DIR": str(args.scratch / "runs"),
           "HIERA_CACHE_DIR": str(args.scratch / "cache")}
    command = label_command(pairs, out, args.method, args.threads, args.backend, server and server.url, [])
    finished: dict[str, float] = {}
    start, killed_at = time.perf_counter(), []
    try:
        for _ in range(args.kills):
            proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(args.min_s, args.max_s))
            if proc.poll() is not None:
                break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            rows = stored(store, tag)
            rejudged = [p for p, t in finished.items() if rows.get(p) != t]
            if rejudged:
                raise SystemExit(f"{len(rejudged)} finished pairs were judged again, e.g. {rejudged[:3]}")
            finished.update(rows)
            killed_at.append(len(rows))
            print(f"kill {len(killed_at)}: {len(rows):,}/{n:,} rows stored", flush=True)
        final = measure(command, args.scratch, tag + "-final")
    finally:
        if server:
            server.close()
    rows = stored(store, tag)
    with open(out / "labels.jsonl", encoding="utf-8") as fh:
        ids = [json.loads(line)["id"] for line in fh]
    exact = len(rows) == n and len(ids) == n and len(set(ids)) == n
    record({"kind": "kill", "method": args.method, "pairs": n, "backend": args.backend, "kills": len(killed_at),
            "rows_at_kills": killed_at, "rows": len(rows), "labels_lines": len(ids), "unique_ids": len(set(ids)),
            "rejudged": sum(1 for p, t in finished.items() if rows.get(p) != t), "exactly_once": exact,
            "wall_s": round(time.perf_counter() - start, 1), "final_wall_s": final["wall_s"],
            "peak_rss_mb": final["peak_rss_mb"], "stderr_lines": final["stderr_lines"], "store_mb": store_mb(args.scratch),
            "load": os.getloadavg()[0], "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    if not exact:
        raise SystemExit("not every pair exactly once: see the record above")


def stored(store: Path, run_id: str) -> dict[str, float]:
    """pair id -> `finished` time of every row the run has stored (read-only)."""
    if not store.exists():
        return {}
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30)
    try:
        return dict(db.execute("SELECT pair_id, finished FROM judgments WHERE run_id=?", (run_id,)))
    except sqlite3.OperationalError:
        return {}
    finally:
        db.close()


def fill(store: Path, run_id: str, real: int, n: int) -> None:
    """Copy the run's `real` judged rows (cycling) as the rows of pairs p{real}..p{n-1}, in batched transactions."""
    with sqlite3.connect(store) as db:
        cur = db.execute("SELECT * FROM judgments WHERE run_id=? ORDER BY position", (run_id,))
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        marks = ",".join("?" * len(names))
        for start in range(real, n, 10_000):
            batch = []
            for i in range(start, min(n, start + 10_000)):
                row = dict(rows[i % len(rows)], pair_id=f"p{i}", position=i, finished=time.time())
                batch.append([row[k] for k in names])
            db.executemany(f"INSERT OR REPLACE INTO judgments VALUES ({marks})", batch)
            db.commit()


def table(_args) -> None:
    """The measurements so far as a Markdown table (CPU seconds, the per-tenth times and RSS where they were recorded),
    printed and written to bench/results/scale.md."""
    lines = [("| kind | method | backend | pairs | commit | wall s | s per 1k | CPU s per 1k | s per 1k, first / last "
              "tenth | peak RSS MB | RSS MB by tenth | store MB | bytes/row | stderr lines | load |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for line in RESULTS.read_text().splitlines():
        r = json.loads(line)
        times = (f"{r['s_per_1k_first_tenth']} / {r['s_per_1k_last_tenth']}" if r.get("s_per_1k_first_tenth")
                 else "-")
        by_tenth = " ".join(map(str, r.get("rss_mb_by_tenth") or [])) or "-"
        errs = r.get("stderr_lines")
        lines.append(f"| {r['kind']} | {r['method']} | {r.get('backend', '-')} | {r['pairs']:,} | "
                     f"{r.get('commit', '-')} | {r['wall_s']} | {r.get('s_per_1k', '-')} | {r.get('cpu_s_per_1k', '-')} "
                     f"| {times} | {r['peak_rss_mb']} | {by_tenth} | {r['store_mb']} | {r.get('row_bytes') or '-'} | "
                     f"{errs if errs is not None else '-'} | {r.get('load', 0):.1f} |")
    text = "\n".join(lines) + "\n"
    TABLE.write_text("# eval.label at scale (`python -m bench.scale table`, from bench/results/scale.jsonl)\n\n" + text)
    print(text, end="")


def fake_label(answers: str, argv: list[str]) -> None:
    """eval.label with every role LM the in-process fake LM (`--backend fake`)."""
    from eval import label as eval_label
    from hiera_dspy.lm.roles import lm_factory
    from hiera_dspy.testing import fake_lm

    with lm_factory(lambda spec, role: fake_lm(json.loads(answers))):
        eval_label.main(argv)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_fake":
        return fake_label(sys.argv[2], sys.argv[3:])
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("label", "resume", "kill", "table"))
    p.add_argument("--pairs", type=int, nargs="+", default=[10_000])
    p.add_argument("--method", default="zero-shot", choices=("zero-shot", "hiera"))
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--backend", default="loopback", choices=("loopback", "fake"))
    p.add_argument("--again", action="store_true", help="label: rerun each finished run once (the resume time)")
    p.add_argument("--real", type=int, default=20_000, help="resume: pairs judged for real before the copy")
    p.add_argument("--kills", type=int, default=6, help="kill: SIGKILLs before the run may finish")
    p.add_argument("--min-s", type=float, default=5.0, help="kill: shortest life of a killed process, s")
    p.add_argument("--max-s", type=float, default=40.0, help="kill: longest life of a killed process, s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scratch", type=Path, default=Path("/tmp/hiera-scale"))
    args = p.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    {"label": label, "resume": resume, "kill": kill, "table": table}[args.what](args)


if __name__ == "__main__":
    main()

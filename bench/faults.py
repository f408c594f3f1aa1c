"""Fault benchmark: what `python -m eval.label` does when things break, each fault injected for real, on loopback.

    python -m bench.faults [--pairs 40] [--threads 4] [--seed 7] [--only kill-labelling,disk-full]

Every scenario labels the first `--pairs` MSRD dev pairs with zero-shot against tests/fault_server.py, a separate
process on 127.0.0.1 whose `label` answer is a known function of the query (so a wrong label is seen), with the
product's own retry and breaker settings (no test shortcuts), then reruns the same command (with --retry-errors where
the message says so; at most MAX_RESUMES times) until the run is complete. Each row says:

- faults: what was injected (kills landed, requests faulted, seconds down, bytes free)
- outcome: `complete` (the first command finished) or `stop` (it ended with exit status 3 and a message naming the
  cause), then `resumed N`: how many reruns it took
- expected / once: pairs of the run, and pairs with exactly one store row and one labels.jsonl record at the end
- lost, dup: pairs with no row / more than one record (must be 0)
- wrong: judgments whose label is not the label the server gave, or a failure counted as a label (must be 0)
- stop s: seconds from the fault being certain (the server killed, the run started on a full disk) to the process's
  exit, when it stopped

Scenarios: SIGKILL at random moments while labelling, while exporting, while applying decisions (decisions are
all-or-nothing: after each kill the store holds none or all of the file); the endpoint down from the start, dying mid
run, flapping (2 s up / 2 s down), slow (1 s a request), 429 and 500 storms, garbage JSON; the store on a full disk (a
1 MB tmpfs mounted here: needs root, else the row says skipped) and locked (another writer on the same run; an SQLite
lock held by another process for 5 s). Results: bench/results/faults.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "faults.md"
LABELS = ["Irrelevant", "Relevant"]  # MSRD's scheme; the server answers one of them by the query's CRC-32
RUN_ID = "bench"
MAX_RESUMES = 6  # reruns of the same command before a scenario counts as not recovered
FREE_KB = 160  # space left on the tmpfs for the store
COMMAND_TIMEOUT = 240  # seconds any one command may take (a hang is a failure of the row)


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the server is restarted on the same one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """tests/fault_server.py in its own process on a fixed loopback port: `start`, `kill` (SIGKILL: the endpoint is
    down, connections refused), `control` (faults and latency over HTTP)."""

    def __init__(self, port: int, latency: float = 0.0, faults: str = ""):
        self.port, self.latency, self.faults = port, latency, faults
        self.proc: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{port}/v1"

    def start(self) -> Server:
        cmd = [sys.executable, str(ROOT / "tests" / "fault_server.py"), "--port", str(self.port), "--latency",
               str(self.latency), "--retry-after", "0.2", "--vary-label", ",".join(LABELS), "--seed", "3"]
        if self.faults:
            cmd += ["--faults", self.faults]
        for _ in range(50):  # the port may linger a moment after a kill
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                         env={**os.environ, "PYTHONPATH": str(ROOT)})
            line = self.proc.stdout.readline()
            if line.startswith("URL"):
                return self
            self.proc.wait()
            time.sleep(0.1)
        raise RuntimeError("fault server did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def control(self, **cmd) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/control", data=json.dumps(cmd).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as r:
            return json.loads(r.read())


@dataclass
class Workspace:
    """One scenario's folder: its store, output folder, caches and the eval.label command line."""

    root: Path
    url: str
    pairs: int
    threads: int
    store: Path | None = None

    def __post_init__(self):
        self.store = self.store or self.root / "store.sqlite"
        self.out = self.root / "out"
        self.env = {**os.environ, "HIERA_RUNS_DIR": str(self.root / "runs"), "DSPY_CACHEDIR": str(self.root / "dspy"),
                    "HIERA_CACHE_DIR": str(self.root / "cache"),
                    "PYTHONUNBUFFERED": "1", "HIERA_NO_PROGRESS": "1", "PYTHONPATH": str(ROOT)}
        self.env.pop("HIERA_LM", None)

    def argv(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "eval.label", "--dataset", "msrd", "--split", "dev", "--limit", str(self.pairs),
                "--method", "zero-shot", "--lm", "openai/fake", "--api-base", self.url, "--knowledge", "none",
                "--threads", str(self.threads), "--run-id", RUN_ID, "--store", str(self.store), "--out",
                str(self.out), "--max-error-rate", "1", *extra]

    def start(self, argv: list[str], name: str) -> subprocess.Popen:
        err = open(self.root / f"{name}.err", "w")  # noqa: SIM115 - the child writes it until it exits
        return subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=err)

    def run(self, argv: list[str], name: str) -> tuple[int, str, float]:
        start = time.monotonic()
        proc = self.start(argv, name)
        try:
            rc = proc.wait(timeout=COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        return rc, (self.root / f"{name}.err").read_text(), time.monotonic() - start

    def rows(self) -> list[tuple]:
        """(pair id, label, error) of every store row of the run."""
        if not self.store.exists():
            return []
        db = sqlite3.connect(f"file:{self.store}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute("SELECT pair_id, label, error FROM judgments WHERE run_id=?", (RUN_ID,)).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            db.close()


@dataclass
class Row:
    """One line of the results table."""

    scenario: str
    faults: str = ""
    outcome: str = ""
    expected: int = 0
    once: int = 0
    lost: int = 0
    dup: int = 0
    wrong: int = 0
    stop_s: float | None = None
    note: str = ""
    resumes: int = 0
    codes: list[int] = field(default_factory=list)


def expected_labels(pairs: int) -> dict[str, str]:
    """pair id -> the label the server answers for it (the CRC-32 of its query, as the server computes it)."""
    from hiera_dspy.data import load_dataset
    from hiera_dspy.untrusted.screen import program_inputs

    out = {}
    for p in load_dataset("msrd").split("dev", pairs):
        query = program_inputs(p)["query"].strip()
        out[p.id] = LABELS[zlib.crc32(query.encode()) % len(LABELS)]
    return out


def tally(ws: Workspace, row: Row, truth: dict[str, str]) -> Row:
    """Fill the row's counts from the store and labels.jsonl."""
    rows = ws.rows()
    per_pair: dict[str, int] = {}
    for pid, _, _ in rows:
        per_pair[pid] = per_pair.get(pid, 0) + 1
    records: dict[str, int] = {}
    labels_file = ws.out / "labels.jsonl"
    if labels_file.exists():
        for line in labels_file.read_text().splitlines():
            records[json.loads(line)["id"]] = records.get(json.loads(line)["id"], 0) + 1
    row.expected = len(truth)
    row.once = sum(1 for pid in truth if per_pair.get(pid) == 1 and records.get(pid) == 1)
    row.lost = sum(1 for pid in truth if pid not in per_pair or pid not in records)
    row.dup = sum(1 for pid in truth if per_pair.get(pid, 0) > 1 or records.get(pid, 0) > 1)
    row.wrong = sum(1 for pid, label, error in rows if label is not None and (error or label != truth.get(pid)))
    return row


def complete(ws: Workspace, row: Row) -> bool:
    """The last command exited 0, every pair has a row without an error and labels.jsonl has every pair."""
    rows = ws.rows()
    labels = ws.out / "labels.jsonl"
    exported = len(labels.read_text().splitlines()) if labels.exists() else 0
    return (bool(row.codes) and row.codes[-1] == 0 and len(rows) == ws.pairs and not any(e for _, _, e in rows)
            and exported == ws.pairs)


def resume(ws: Workspace, row: Row, retry: bool = True) -> None:
    """Rerun the command (with --retry-errors) until it exits 0 with no error row, at most MAX_RESUMES times."""
    for n in range(1, MAX_RESUMES + 1):
        if complete(ws, row):
            return
        rc, _, _ = ws.run(ws.argv(*(["--retry-errors"] if retry else [])), f"resume-{n}")
        row.codes.append(rc)
        row.resumes = n
    if not complete(ws, row):
        row.note += " not complete after the resumes;"


def first_rows(ws: Workspace, proc: subprocess.Popen, seconds: float = 120) -> bool:
    """Wait until the run has a row (the process is judging) or the process ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None and not ws.rows():
        time.sleep(0.05)
    return proc.poll() is None


# --- scenarios --------------------------------------------------------------------------------------------------

def clean(ws, server, rng) -> Row:
    row = Row("clean (no fault)", "none")
    rc, _, took = ws.run(ws.argv(), "first")
    row.codes.append(rc)
    row.outcome = "complete" if rc == 0 else f"exit {rc}"
    row.note = f"{took:.1f} s for the run;"
    return row


def kill_labelling(ws, server, rng) -> Row:
    server.control(latency=0.1)
    kills = 0
    for attempt in range(4):
        proc = ws.start(ws.argv(), f"killed-{attempt}")
        if not first_rows(ws, proc):
            proc.wait()
            break
        time.sleep(rng.uniform(0.2, 1.5))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    row = Row("SIGKILL while labelling", f"{kills} kills at random moments", "killed")
    resume(ws, row, retry=False)
    return row


def kill_export(ws, server, rng) -> Row:
    rc, _, took = ws.run(ws.argv(), "first")
    partial = kills = 0
    for attempt in range(5):
        for name in ("labels.jsonl", "qrels.txt"):
            (ws.out / name).unlink(missing_ok=True)
        proc = ws.start(ws.argv(), f"export-{attempt}")
        time.sleep(rng.uniform(0.5, took))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        text = (ws.out / "labels.jsonl").read_text() if (ws.out / "labels.jsonl").exists() else None
        if text is not None and len(text.splitlines()) != ws.pairs:
            partial += 1  # an export file cut short: what the atomic write must prevent
    row = Row("SIGKILL while exporting", f"{kills} kills in a re-export", "killed", codes=[rc, -9])
    row.note = f"{partial} partial export files seen after a kill;"
    resume(ws, row, retry=False)
    return row


def kill_decisions(ws, server, rng) -> Row:
    rc, _, _ = ws.run(ws.argv(), "first")
    ids = [pid for pid, _, _ in ws.rows()][:20]
    file = ws.root / "decisions.jsonl"
    file.write_text("".join(json.dumps({"id": pid, "label": "Relevant", "who": "bench"}) + "\n" for pid in ids))
    argv = [sys.executable, "-m", "eval.escalations", "--run", RUN_ID, "--store", str(ws.store), "--labels", str(file)]
    _, _, decide_took = ws.run(argv, "decide-timing")  # applied once to time it; undone below
    db = sqlite3.connect(ws.store)
    db.execute("DELETE FROM decisions WHERE run_id=?", (RUN_ID,))
    db.execute("UPDATE judgments SET human_label=NULL WHERE run_id=?", (RUN_ID,))
    db.commit()
    db.close()
    halfway = kills = 0
    for attempt in range(6):
        proc = ws.start(argv, f"decide-{attempt}")
        time.sleep(rng.uniform(0.3, decide_took))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        stored = _decided(ws)
        halfway += stored not in (0, len(ids))
        if stored == len(ids):
            break
    for n in range(2):  # then applied for good, twice: stored once
        ws.run(argv, f"decide-final-{n}")
    row = Row("SIGKILL while applying decisions", f"{kills} kills, {len(ids)} decisions", "killed", codes=[rc])
    stored = _decided(ws)
    humans = sum(1 for line in (ws.out / "labels.jsonl").read_text().splitlines()
                 if json.loads(line)["source"] == "human")
    row.note = (f"{halfway} kills left part of the file stored; {stored} decision rows for {len(ids)} decisions "
                f"after applying it twice more; {humans} human labels exported;")
    if stored != len(ids) or humans != len(ids) or halfway:
        row.note += " FAILED;"
    return row


def _decided(ws) -> int:
    db = sqlite3.connect(f"file:{ws.store}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute("SELECT count(*) FROM decisions WHERE run_id=?", (RUN_ID,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def endpoint_down(ws, server, rng) -> Row:
    server.kill()
    rc, err, took = ws.run(ws.argv(), "first")
    row = Row("endpoint down from the start", "connection refused", codes=[rc], stop_s=took)
    row.outcome = _stop(rc, err, ws.url, row)
    server.start()
    resume(ws, row, retry=False)  # the same command
    return row


def endpoint_dies(ws, server, rng) -> Row:
    server.control(latency=0.05)
    proc = ws.start(ws.argv(), "first")
    while proc.poll() is None and len(ws.rows()) < ws.pairs // 4:
        time.sleep(0.05)
    server.kill()
    killed, at = time.monotonic(), len(ws.rows())
    rc = proc.wait(timeout=COMMAND_TIMEOUT)
    row = Row("endpoint dies mid-run", f"server killed after {at} rows", codes=[rc],
              stop_s=time.monotonic() - killed)
    row.outcome = _stop(rc, (ws.root / "first.err").read_text(), ws.url, row)
    server.start()
    resume(ws, row)
    return row


def flapping(ws, server, rng) -> Row:
    server.control(latency=1.0)  # a run of several outages
    proc = ws.start(ws.argv(), "first")
    first_rows(ws, proc)
    flaps = 0
    while proc.poll() is None and flaps < 15:
        time.sleep(2)
        server.control(down=2)  # not listening, connections closed, for 2 s
        time.sleep(2.2)
        flaps += 1
    rc = proc.wait(timeout=COMMAND_TIMEOUT)
    row = Row("endpoint flapping (2 s up, 2 s down)", f"{flaps} outages", codes=[rc])
    err = (ws.root / "first.err").read_text()
    row.outcome = "complete" if rc == 0 else _stop(rc, err, ws.url, row)
    errors = sum(1 for _, _, e in ws.rows() if e)
    row.note += f" {errors} error rows after the first command;"
    resume(ws, row)
    return row


def slow(ws, server, rng) -> Row:
    server.control(latency=1.0)
    rc, _, took = ws.run(ws.argv(), "first")
    row = Row("slow endpoint (1 s a request)", "1 s latency", "complete" if rc == 0 else f"exit {rc}", codes=[rc])
    row.note = f"{took:.1f} s for the run;"
    resume(ws, row)
    return row


def storm(kind: str, title: str, rate: float):
    def scenario(ws, server, rng) -> Row:
        server.control(faults={kind: rate}, reset=True)
        rc, _, _ = ws.run(ws.argv(), "first")
        stats = server.stats()
        errors = sum(1 for _, _, e in ws.rows() if e)
        server.control(faults={})
        row = Row(title, f"{stats.get(kind, 0)} of {stats.get('requests', 0)} requests", codes=[rc])
        row.outcome = "complete" if rc == 0 else f"exit {rc}"
        row.note = f"{errors} error rows after the first command (retried by --retry-errors);"
        resume(ws, row)
        return row
    return scenario


def garbage(ws, server, rng) -> Row:
    server.control(faults={"garbage": 0.3, "empty": 0.1, "truncated": 0.1}, reset=True)
    rc, _, _ = ws.run(ws.argv(), "first")
    stats = server.stats()
    errors = sum(1 for _, _, e in ws.rows() if e)
    server.control(faults={})
    faulted = sum(stats.get(k, 0) for k in ("garbage", "empty", "truncated"))
    row = Row("garbage / empty / cut answers", f"{faulted} of {stats.get('requests', 0)} requests", codes=[rc])
    row.outcome = "complete" if rc == 0 else f"exit {rc}"
    row.note = f"{errors} error rows after the first command;"
    resume(ws, row)
    return row


def disk_full(ws, server, rng) -> Row:
    disk = ws.root / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True,
                             text=True, check=False)
    if mounted.returncode != 0:
        return Row("store on a full disk", outcome="skipped",
                   note=f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode}): run as root;")
    try:
        ws.store = disk / "store.sqlite"
        filler = disk / "filler"
        with open(filler, "wb") as fh:  # leave ~160 KB: the store starts, then fills a few dozen rows in
            fh.write(b"\0" * (1024 * 1024 - FREE_KB * 1024))
        rc, err, took = ws.run(ws.argv(), "first")
        row = Row("store on a full disk (1 MB tmpfs)", f"{FREE_KB} KB free", codes=[rc], stop_s=took)
        row.outcome = _stop(rc, err, str(ws.store), row)
        failed = err.split("cannot write ", 1)[-1].split(" (SQLite", 1)[0] if "cannot write " in err else "?"
        row.note += f" {len(ws.rows())} rows written before it could not write {failed};"
        filler.unlink()
        resume(ws, row, retry=False)
        return tally(ws, row, expected_labels(ws.pairs))
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def locked(ws, server, rng) -> Row:
    server.control(latency=2.0)  # the first writer stays mid-run while the second starts
    first = ws.start(ws.argv(), "first")
    first_rows(ws, first)
    rc2, err2, took2 = ws.run(ws.argv(), "second")
    script = ("import sqlite3, sys, time\n"
              f"db = sqlite3.connect({str(ws.store)!r}, isolation_level=None, timeout=60)\n"
              "db.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(5)\n"
              "db.execute('ROLLBACK')")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    holder.wait(timeout=60)
    rc1 = first.wait(timeout=COMMAND_TIMEOUT)
    refused = rc2 != 0 and "is being written by pid" in err2
    row = Row("store locked (a 2nd writer; a 5 s SQLite lock)", "2nd writer + 5 s exclusive lock", codes=[rc1],
              outcome="complete" if rc1 == 0 else f"exit {rc1}", stop_s=took2 if refused else None)
    row.note = (f"2nd writer {'refused' if refused else 'NOT refused'} (exit {rc2}) in {took2:.1f} s; the first "
                "waited out the lock;")
    resume(ws, row)
    return row


def _stop(rc: int, err: str, what: str, row: Row) -> str:
    """'stop' when the command exited 3 with a message naming `what` and how to resume; else what happened."""
    last = [line for line in err.splitlines() if line.startswith("error:")]
    clear = rc == 3 and last and what.rstrip("/") in last[-1] and "rerun the same command" in last[-1]
    if not clear:
        row.note += f" unclear end: exit {rc}, {(last or err.splitlines() or [''])[-1][:160]!r};"
    return "stop" if clear else f"exit {rc}"


SCENARIOS = {
    "clean": clean,
    "kill-labelling": kill_labelling,
    "kill-export": kill_export,
    "kill-decisions": kill_decisions,
    "endpoint-down": endpoint_down,
    "endpoint-dies": endpoint_dies,
    "flapping": flapping,
    "slow": slow,
    "429-storm": storm("rate_limit", "429 storm (half the requests)", 0.5),
    "500-storm": storm("server_error", "500 storm (half the requests)", 0.5),
    "garbage": garbage,
    "disk-full": disk_full,
    "locked": locked,
}


def run_scenario(name: str, args, rng: random.Random, base: Path) -> Row:
    """One scenario in a fresh folder with a fresh server; the row with its counts."""
    root = base / name
    root.mkdir()
    server = Server(free_port()).start()
    ws = Workspace(root, server.url, args.pairs, args.threads)
    start = time.monotonic()
    try:
        row = SCENARIOS[name](ws, server, rng)
    finally:
        server.kill()
    if row.outcome != "skipped" and name != "disk-full":
        row = tally(ws, row, expected_labels(args.pairs))
    row.note += f" {time.monotonic() - start:.0f} s in all"
    print(f"{name}: {row}", file=sys.stderr, flush=True)
    return row


def table(rows: list[Row], args) -> str:
    """The results as Markdown."""
    head = ("| scenario | faults injected | outcome | resumes | expected | present once | lost | dup | wrong | "
            "stop s | notes |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = [f"| {r.scenario} | {r.faults} | {r.outcome} | {r.resumes} | {r.expected} | {r.once} | {r.lost} | "
             f"{r.dup} | {r.wrong} | {'' if r.stop_s is None else f'{r.stop_s:.1f}'} | {r.note.strip()} |"
             for r in rows]
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=40, help="MSRD dev pairs per scenario (default 40)")
    p.add_argument("--threads", type=int, default=4, help="eval.label --threads (default 4)")
    p.add_argument("--seed", type=int, default=7, help="seed of the kill moments")
    p.add_argument("--only", help="comma-separated scenarios (default: all): " + ", ".join(SCENARIOS))
    p.add_argument("--out", default=str(RESULTS), help="Markdown results file")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(SCENARIOS)
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}; known: {', '.join(SCENARIOS)}")
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="hiera-faults-"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        rows = [run_scenario(name, args, rng, base) for name in names]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip()
    text = (f"# Fault benchmark\n\n`python -m bench.faults --pairs {args.pairs} --threads {args.threads} --seed "
            f"{args.seed}` on {started}, commit {commit}, {os.cpu_count()} CPUs. Every scenario labels "
            f"{args.pairs} MSRD dev pairs with zero-shot (`python -m eval.label`) against tests/fault_server.py on "
            "127.0.0.1, with the product's default retry and breaker settings, then reruns the same command "
            f"(with --retry-errors after errors) until complete, at most {MAX_RESUMES} times. `present once`: pairs "
            "with exactly one store row and one labels.jsonl record at the end; `wrong`: a label that is not the "
            "server's answer for the pair, or a failure counted as a label; `stop s`: seconds from the fault being "
            "certain to the command's exit, when it stopped (exit status 3, the message naming the endpoint or "
            "store and how to resume).\n\n" + table(rows, args))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

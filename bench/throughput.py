"""Throughput of the engines (threads, async, ray) and per-call framework overhead, against the fault server
(tests/fault_server.py).

    python -m bench.throughput                     # full table: 1, 4, 16, 64 threads x zero-shot, hiera at 200 ms
    python -m bench.throughput --threads 1 16 --latency 0.2 --pairs-per-thread 4
    python -m bench.throughput --profile           # also cProfile the zero-latency overhead run (top functions)
    python -m bench.throughput --engines threads async --threads 1 16 64   # engines side by side (async: concurrency)
    python -m bench.throughput --threads 1 --ray-actors 1 2 4 --skip-overhead   # --engine ray: actors vs pairs/s

The server runs in its own process (it must not share this process's GIL) with a fixed latency per call and no
faults; every LM call reaches it (DSPy's cache is disabled). Judgments go through `run_pairs` into a temporary run
store, exactly as `python -m eval.run` does.

Overhead per LM call (server latency 0): the wall time per call through `run_pairs` (1 thread, one-call method) minus
the wall time per call of the same HTTP request sent directly with `http.client` (keep-alive). Both include the
server's own time, so the difference is what the framework adds: DSPy's adapter (format + parse), the lm15 engine,
history and usage tracking, our accounting, and the SQLite commit of each judgment. Client CPU time per call (less
sensitive to other load on the machine) is shown too. It is measured for a model name DSPy's price metadata does not
list (any self-hosted model: DSPy then scans all ~4,500 entries twice per call), for a listed one
(openai/gpt-4o-mini), and with that lookup memoized (an experiment patched in here only). Pieces measured alone and an
in-process FakeEngine run (no HTTP at all) follow. hiera runs with every triage "unclear", so it always delegates.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import http.client
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
import dspy

import hiera_dspy  # noqa: F401  (first: hiera_dspy.settings sets the process environment dspy reads)
from hiera_dspy.data import load_dataset
from hiera_dspy.engines import EngineOptions, Job, judge
from hiera_dspy.lm.roles import ROLES, LMSpec, build_lms
from hiera_dspy.methods import BuildContext, available, build
from hiera_dspy.runs.runner import judge_one, run_pairs
from hiera_dspy.store.run_store import RunStore


class Server:
    """tests/fault_server.py in a subprocess, reconfigured over HTTP."""

    def __init__(self, latency: float, answers: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fault_server.py"), "--latency",
                                      str(latency), "--answers", json.dumps(answers or {})],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        if not line.startswith("URL "):
            raise RuntimeError(f"fault server did not start: {line!r}")
        self.url = line.split()[1]
        parsed = urlparse(self.url)
        self.host, self.port = parsed.hostname, parsed.port

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        conn.request(method, path, body=json.dumps(body or {}), headers={"Content-Type": "application/json"})
        out = json.loads(conn.getresponse().read())
        conn.close()
        return out

    def control(self, **cmd) -> dict:
        return self._call("POST", "/v1/control", cmd)

    def stats(self) -> dict:
        return self._call("GET", "/v1/stats")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def make_program(method: str, scheme, url: str, model: str = "openai/bench"):
    lms = build_lms({role: LMSpec(model, api_base=url) for role in ROLES})
    return build(method, BuildContext(scheme, lms)), lms


def run_once(method: str, threads: int, n_pairs: int, server: Server, dataset, engine: str = "threads",
             model: str = "openai/bench") -> dict:
    """One run of `n_pairs` through an engine; `threads` is the thread count (threads) or concurrency (async)."""
    pairs = (dataset.split("dev") * (1 + n_pairs // 300))[:n_pairs]  # past 300: the dev split again (uncached)
    pairs = [p._replace(id=f"{p.id}#{i}") for i, p in enumerate(pairs)]
    program, lms = make_program(method, dataset.scheme, server.url, model)
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "store.sqlite")
        server.control(reset=True)
        start = time.perf_counter()
        rows = judge(engine, Job(program, pairs, store, "bench", lms, progress=False,
                                 options=EngineOptions(threads=threads, concurrency=threads)))
        wall = time.perf_counter() - start
        store.close()
    stats = server.stats()
    errors = sum(1 for r in rows if r["error"])
    return {"engine": engine, "method": method, "threads": threads, "pairs": len(rows), "errors": errors, "wall": wall,
            "calls": stats.get("requests", 0), "jps": len(rows) / wall, "cps": stats.get("requests", 0) / wall,
            "max_in_flight": stats.get("max_in_flight"), "server_seconds": stats.get("server_seconds", 0.0)}


def bench_replica(method: str, url: str, model: str, api_base=None):
    """A Ray actor's program (Job.factory): the bench's program against the bench server."""
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    return make_program(method, load_dataset("msrd").scheme, url, model)[0]


def ray_once(method: str, actors: int, n_pairs: int, server: Server, dataset, model: str) -> dict:
    """`--engine ray` with `actors` local actors; wall includes starting the actors (each builds its replica)."""
    import functools

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bench"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    pairs = (dataset.split("dev") * (1 + n_pairs // 300))[:n_pairs]
    pairs = [p._replace(id=f"{p.id}#{i}") for i, p in enumerate(pairs)]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "store.sqlite")
        server.control(reset=True)
        start = time.perf_counter()
        rows = judge("ray", Job(None, pairs, store, "bench", progress=False, options=EngineOptions(ray_actors=actors),
                                factory=functools.partial(bench_replica, method, server.url, model)))
        wall = time.perf_counter() - start
        store.close()
    stats = server.stats()
    finished = sorted(r["finished"] for r in rows)
    steady = (len(finished) - 1) / (finished[-1] - finished[0]) if len(finished) > 1 else None
    return {"engine": "ray", "method": method, "threads": actors, "pairs": len(rows), "wall": wall, "steady": steady,
            "errors": sum(1 for r in rows if r["error"]), "calls": stats.get("requests", 0),
            "jps": len(rows) / wall, "cps": stats.get("requests", 0) / wall, "max_in_flight": stats.get("max_in_flight")}


def direct_calls(server: Server, body: dict, n: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call for the same chat request sent with http.client over one keep-alive connection."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    data = json.dumps(body)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer local"}
    for _ in range(5):  # warm-up
        conn.request("POST", "/v1/chat/completions", body=data, headers=headers)
        conn.getresponse().read()
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        conn.request("POST", "/v1/chat/completions", body=data, headers=headers)
        conn.getresponse().read()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    conn.close()
    return wall / n, cpu / n


def _per_call_run_pairs(program, pairs, server: Server, engine: str = "threads") -> tuple[float, float, dict, list]:
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "s.sqlite")
        server.control(reset=True)
        start, cpu = time.perf_counter(), time.process_time()
        rows = judge(engine, Job(program, pairs, store, "overhead", progress=False,
                                 options=EngineOptions(threads=1, concurrency=1)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        store.close()
    stats = server.stats()
    calls = max(1, stats.get("requests", 0))
    return wall / calls, cpu / calls, stats, rows


def overhead(server: Server, dataset, method: str, n: int, repeats: int, model: str, engine: str = "threads") -> dict:
    """Per-LM-call wall time through run_pairs vs. the same request sent directly; medians over `repeats`."""
    server.control(latency=0.0, reset=True)
    pairs = dataset.split("dev")[:n]
    program, lms = make_program(method, dataset.scheme, server.url, model)
    _per_call_run_pairs(program, pairs[:10], server, engine)  # warm-up: connection, formatting caches
    entry = lms["judge"].history[-1]  # the request DSPy sent last, replayed directly
    body = {"model": model.split("/", 1)[1], "messages": entry["messages"], "temperature": 0.0,
            "max_completion_tokens": 3000}
    framework, direct, fcpu, dcpu, server_ms, rows = [], [], [], [], [], []
    for _ in range(repeats):
        wall, cpu = direct_calls(server, body, n)
        direct.append(wall)
        dcpu.append(cpu)
        wall, cpu, stats, rows = _per_call_run_pairs(program, pairs, server, engine)
        framework.append(wall)
        fcpu.append(cpu)
        server_ms.append(stats.get("server_seconds", 0.0) / max(1, stats.get("requests", 1)))
    med = statistics.median
    return {"method": method, "model": model, "calls": len(pairs), "errors": sum(1 for r in rows if r["error"]),
            "per_call_run_pairs_ms": med(framework) * 1e3, "per_call_direct_ms": med(direct) * 1e3,
            "server_ms": med(server_ms) * 1e3, "overhead_ms": (med(framework) - med(direct)) * 1e3,
            "overhead_min_ms": min(f - d for f, d in zip(framework, direct)) * 1e3,
            "cpu_overhead_ms": (med(fcpu) - med(dcpu)) * 1e3, "row": rows[-1]}


@contextlib.contextmanager
def memoized_pricing():
    """Experiment only: memoize DSPy's advisory price lookup (a linear scan of ~4,500 metadata entries, twice per call,
    for any model name the metadata does not list, i.e. every self-hosted model)."""
    import copy
    import functools

    import dspy.clients.costs as costs

    original = costs.model_info
    cached = functools.lru_cache(maxsize=256)(lambda provider, model, namespaces: original(
        provider, model, namespaces=namespaces))
    costs.model_info = lambda provider, model, *, namespaces=None: copy.deepcopy(
        cached(provider, model, tuple(namespaces) if namespaces is not None else None))
    try:
        yield
    finally:
        costs.model_info = original


def breakdown(dataset, method: str, n: int, row: dict) -> dict:
    """In-process pieces of the per-call cost (no server): where the overhead goes."""
    from dspy.clients.model_metadata import model_info

    from hiera_dspy.lm.roles import RoleLMs
    from hiera_dspy.testing import fake_lm

    out = {}
    for model in ("bench", "gpt-4o-mini"):  # DSPy prices every native call: model_info(response model), then requested
        model_info("openai-chat", model)
        start = time.perf_counter()
        for _ in range(200):
            model_info("openai-chat", model)
            model_info("openai-chat", model)
        out[f"pricing lookup, model {model!r}"] = (time.perf_counter() - start) / 200
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "s.sqlite")
        start = time.perf_counter()
        for i in range(200):
            store.record("b", {**row, "id": f"p{i}"})
        out["store.record (one SQLite commit per judgment)"] = (time.perf_counter() - start) / 200
        store.close()
    fake = RoleLMs.of({role: fake_lm() for role in ROLES})
    fake.specs = {}
    program = build(method, BuildContext(dataset.scheme, fake))
    pairs = dataset.split("dev")[:n]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "s.sqlite")
        run_pairs(program, pairs[:10], store, "warm", threads=1, progress=False)
        start = time.perf_counter()
        rows = run_pairs(program, pairs, store, "fake", threads=1, progress=False)
        wall = time.perf_counter() - start
        store.close()
    out["run_pairs with in-process FakeEngine, no HTTP (DSPy adapter + accounting + store)"] = (
        wall / max(1, sum(r["lm_calls"] for r in rows)))
    return out


def profile_worker(server: Server, dataset, method: str, n: int) -> str:
    """cProfile of what one worker does per pair (judge_one + store.record), run in this thread."""
    server.control(latency=0.0)
    program, _ = make_program(method, dataset.scheme, server.url)
    pairs = dataset.split("dev")[:n]
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "s.sqlite")
        store.record("warm", judge_one(program, pairs[0], 0))
        prof = cProfile.Profile()
        prof.enable()
        for i, pair in enumerate(pairs):
            store.record("profiled", judge_one(program, pair, i))
        prof.disable()
        store.close()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
    return buf.getvalue()


def print_throughput(results: list[dict], latency: float) -> None:
    print(f"\n### Throughput (server latency {latency * 1000:.0f} ms per LM call, no faults, {os.cpu_count()} CPUs)\n")
    print("| engine | method | threads / concurrency | pairs | LM calls | calls/pair | wall s | judgments/s | "
          "LM calls/s | speedup vs 1 thread | max in flight | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['engine']} | {r['method']} | {r['threads']} | {r['pairs']} | {r['calls']} | "
              f"{r['calls'] / r['pairs']:.2f} | {r['wall']:.2f} | {r['jps']:.2f} | {r['cps']:.1f} | "
              f"{r['speedup']:.1f}x | {r['max_in_flight']} | {r['errors']} |")
    ray_rows = [r for r in results if r["engine"] == "ray"]
    if ray_rows:
        print("\n| ray actors | pairs | wall s (with actor start-up) | judgments/s, first to last judgment |")
        print("|---:|---:|---:|---:|")
        for r in ray_rows:
            print(f"| {r['threads']} | {r['pairs']} | {r['wall']:.1f} | {r['steady']:.2f} |")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--methods", nargs="+", default=None, help="default: zero-shot (else judge-only) and hiera")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--pairs-per-thread", type=int, default=4, help="pairs per run = max(12, this x threads)")
    p.add_argument("--max-pairs", type=int, default=300)
    p.add_argument("--overhead-calls", type=int, default=150)
    p.add_argument("--repeats", type=int, default=3, help="overhead measurements (medians are reported)")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--engines", nargs="+", default=["threads"], help="threads, async (async: --threads = concurrency)")
    p.add_argument("--skip-overhead", action="store_true", help="throughput rows only")
    p.add_argument("--ray-actors", type=int, nargs="*", default=[],
                   help="also --engine ray rows with these actor counts (local Ray; zero-shot, 40 pairs per actor)")
    p.add_argument("--model", default="openai/bench",
                   help="model name sent (openai/gpt-4o-mini: one DSPy knows, so its price lookup is a dict hit)")
    args = p.parse_args(argv)

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # every call reaches the server
    methods = args.methods or ["zero-shot" if "zero-shot" in available() else "judge-only", "hiera"]
    dataset = load_dataset("msrd")
    # every triage says "unclear", so hiera delegates: triage, plan, query + item analyses (once per distinct query /
    # item), synthesis, decision = up to 6 LM calls per pair
    server = Server(args.latency, {"query_interpretability": "unclear"})
    try:
        results = []
        for method in methods:
            base = None  # speedups are against the first row of the method (1 thread)
            for engine in args.engines:
                for threads in args.threads:
                    n = min(args.max_pairs, max(12, args.pairs_per_thread * threads))
                    r = run_once(method, threads, n, server, dataset, engine, args.model)
                    base = base or r
                    r["speedup"] = r["jps"] / base["jps"]
                    results.append(r)
                    print(f"  {engine} {method} x{threads}: {r['jps']:.2f} judgments/s ({r['calls']} calls, "
                          f"{r['wall']:.1f}s)", file=sys.stderr)
        if args.ray_actors:
            import ray

            base = next(r for r in results if r["method"] == methods[0])
            for actors in args.ray_actors:
                r = ray_once(methods[0], actors, 40 * actors, server, dataset, args.model)
                r["speedup"] = r["jps"] / base["jps"]
                results.append(r)
                print(f"  ray {methods[0]} x{actors} actors: {r['jps']:.2f} judgments/s", file=sys.stderr)
            ray.shutdown()
        if args.skip_overhead:
            print_throughput(results, args.latency)
            return
        one_call = methods[0]
        ovs = [overhead(server, dataset, one_call, args.overhead_calls, args.repeats, model)
               for model in ("openai/bench", "openai/gpt-4o-mini")]
        with memoized_pricing():
            ovs.append(overhead(server, dataset, one_call, args.overhead_calls, args.repeats, "openai/bench"))
            ovs[-1]["model"] += " (price lookup memoized: experiment)"
        if "async" in args.engines:
            for model in ("openai/bench", "openai/gpt-4o-mini"):
                ovs.append(overhead(server, dataset, one_call, args.overhead_calls, args.repeats, model, "async"))
                ovs[-1]["model"] += " (--engine async, concurrency 1)"
        prof = profile_worker(server, dataset, one_call, args.overhead_calls) if args.profile else None
    finally:
        server.close()

    print_throughput(results, args.latency)
    parts = breakdown(dataset, one_call, args.overhead_calls, ovs[0]["row"])
    print(f"\n### Framework overhead per LM call ({one_call}: 1 LM call per judgment; server latency 0; 1 thread; "
          f"{args.overhead_calls} calls; median of {args.repeats})\n")
    print("| model name | through run_pairs ms | same request direct ms | in server handler ms | **overhead ms** "
          "(median) | overhead ms (best repeat) | client CPU overhead ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for ov in ovs:
        print(f"| {ov['model']} | {ov['per_call_run_pairs_ms']:.2f} | {ov['per_call_direct_ms']:.2f} | "
              f"{ov['server_ms']:.2f} | **{ov['overhead_ms']:.2f}** | {ov['overhead_min_ms']:.2f} | "
              f"{ov['cpu_overhead_ms']:.2f} |")
    print("\n| piece (measured alone, in-process) | ms per LM call |")
    print("|---|---:|")
    for name, seconds in parts.items():
        print(f"| {name} | {seconds * 1e3:.2f} |")
    if prof:
        print("\n```\n" + prof + "\n```")


if __name__ == "__main__":
    main()

"""The judge service under load: `hiera-dspy serve --judge ART` on loopback, N single-pair requests from C concurrent
clients, then the malformed requests a service meets; latency percentiles, errors, the server's memory across the run.

    python -m bench.serve --judge artifacts/msrd/embed-lr.json                     # 10,000 requests, 20 clients
    python -m bench.serve --judge ART --requests 200 --clients 4 --out /tmp/serve  # a small run

The server is a child process (`python -m eval.serve`, its bearer token from an environment variable); the clients
are asyncio tasks on one aiohttp session in this process, each sending one pair a request (the pairs of the bundled
MSRD sample's dev and train splits, in a seeded order, cycled) and waiting for the answer before the next. The
clients share the machine's cores with the server. A warm-up pass first sends each distinct pair once (its latencies
are reported apart: a text's first embedding is computed then, and cached on disk as every run caches it). The
server's resident memory (VmRSS, /proc) is sampled every 0.2 s: "flat" compares the last tenth of the run with the
first. Then: malformed JSON, a 20 MB body, a pair with missing fields, a wrong token; each must get a 4xx, and a good
request after them a 200. Writes OUT/serve.json and OUT/serve.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import httpx

from bench.common import OUT, write_result
from hiera_dspy.data import load_dataset

TOKEN_ENV = "HIERA_BENCH_SERVE_TOKEN"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """The process's resident memory in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def start_server(judge: str, port: int, token: str) -> subprocess.Popen:
    env = {**os.environ, TOKEN_ENV: token}
    proc = subprocess.Popen([sys.executable, "-m", "eval.serve", "--judge", judge, "--port", str(port),
                             "--token-env", TOKEN_ENV], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not answer /health within 300 s")


async def load(url: str, headers: dict, pairs: list[dict], requests: int, clients: int, pid: int) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    failures: list[str] = []
    memory: list[tuple[float, float]] = []
    sent = 0
    done = asyncio.Event()

    async def client(http: aiohttp.ClientSession) -> None:
        nonlocal sent
        while sent < requests:
            body = pairs[sent % len(pairs)]
            sent += 1
            start = time.perf_counter()
            try:
                async with http.post(url, json=body, headers=headers) as response:
                    answer = await response.json(content_type=None)
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.status == 200 and answer.get("label"):
                    latencies.append(time.perf_counter() - start)
                else:
                    failures.append(f"{response.status}: {str(answer)[:200]}")
            except (aiohttp.ClientError, ValueError) as exc:
                failures.append(f"{type(exc).__name__}: {exc}")

    async def sample() -> None:
        while not done.is_set():
            memory.append((len(latencies) + len(failures), rss_mb(pid)))
            await asyncio.sleep(0.2)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:
        sampler = asyncio.create_task(sample())
        started = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        wall = time.perf_counter() - started
        done.set()
        await sampler
    return {"latencies": latencies, "statuses": statuses, "failures": failures, "memory": memory, "wall": wall}


def abuse(base: str, token: str, pair: dict) -> dict:
    """Each malformed request's status, then whether a good one still gets 200."""
    good = {"Authorization": f"Bearer {token}"}
    cases = {
        "malformed JSON": lambda: httpx.post(f"{base}/judge", content=b'{"query": "x", ', headers=good),
        "20 MB body": lambda: httpx.post(f"{base}/judge", content=b"x" * (20 * 1024 * 1024), headers=good,
                                         timeout=60),
        "missing fields": lambda: httpx.post(f"{base}/judge", json={"item_title": "t"}, headers=good),
        "wrong token": lambda: httpx.post(f"{base}/judge", json=pair, headers={"Authorization": "Bearer wrong"}),
        "no token": lambda: httpx.post(f"{base}/judge", json=pair),
    }
    out = {}
    for name, send in cases.items():
        try:
            out[name] = send().status_code
        except httpx.HTTPError as exc:
            out[name] = f"{type(exc).__name__}"
        out[f"{name}: then a good request"] = httpx.post(f"{base}/judge", json=pair, headers=good).status_code
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judge", required=True, help="a compiled judge's artifact")
    p.add_argument("--requests", type=int, default=10_000)
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    dataset = load_dataset("msrd")
    pairs = [{"query": x.query, "item_title": x.item_title, "item_text": x.item_text}
             for split in ("dev", "train") for x in dataset.split(split)]
    random.Random(a.seed).shuffle(pairs)
    token, port = os.urandom(16).hex(), free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(a.judge, port, token)
    try:
        headers = {"Authorization": f"Bearer {token}"}
        warm = asyncio.run(load(f"{base}/judge", headers, pairs, len(pairs), a.clients, server.pid))
        run = asyncio.run(load(f"{base}/judge", headers, pairs, a.requests, a.clients, server.pid))
        abused = abuse(base, token, pairs[0])
        metrics = httpx.get(f"{base}/metrics", headers=headers).json()
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    lat = run["latencies"]
    tenth = max(1, len(run["memory"]) // 10)
    first, last = run["memory"][:tenth], run["memory"][-tenth:]
    rss_first, rss_last = statistics.median(m for _, m in first), statistics.median(m for _, m in last)
    result = {
        "judge": a.judge, "requests": a.requests, "clients": a.clients, "cpus": os.cpu_count(),
        "errors": len(run["failures"]), "statuses": {str(k): v for k, v in sorted(run["statuses"].items())},
        "first_errors": run["failures"][:5], "wall_s": round(run["wall"], 2),
        "requests_per_s": round(len(lat) / run["wall"], 1),
        "latency_ms": {"p50": round(pct(lat, 0.5), 2), "p90": round(pct(lat, 0.9), 2),
                       "p99": round(pct(lat, 0.99), 2), "max": round(max(lat) * 1000, 2)} if lat else None,
        "warmup": {"pairs": len(pairs), "errors": len(warm["failures"]),
                   "p50_ms": round(pct(warm["latencies"], 0.5), 2) if warm["latencies"] else None,
                   "p99_ms": round(pct(warm["latencies"], 0.99), 2) if warm["latencies"] else None},
        "rss_mb": {"first_tenth": round(rss_first, 1), "last_tenth": round(rss_last, 1),
                   "growth": round(rss_last - rss_first, 1), "max": round(max(m for _, m in run["memory"]), 1)},
        "abuse": abused, "server_metrics": metrics, "token_in_server_output": token in err.decode(errors="replace"),
    }
    text = report(result)
    write_result(a.out, "serve", result, text)
    return result


def report(r: dict) -> str:
    lat, rss = r["latency_ms"] or {}, r["rss_mb"]
    lines = [f"# The judge service under load ({r['judge']})", "",
             f"{r['requests']} single-pair requests from {r['clients']} concurrent clients on loopback "
             f"({r['cpus']} CPUs, shared with the clients): {r['errors']} errors, statuses {r['statuses']}, "
             f"{r['requests_per_s']} requests/s over {r['wall_s']} s.", "",
             "| p50 ms | p90 ms | p99 ms | max ms | RSS first tenth MB | RSS last tenth MB | growth MB |",
             "|---|---|---|---|---|---|---|",
             f"| {lat.get('p50')} | {lat.get('p90')} | {lat.get('p99')} | {lat.get('max')} | {rss['first_tenth']} | "
             f"{rss['last_tenth']} | {rss['growth']} |", "",
             f"Warm-up (each of {r['warmup']['pairs']} distinct pairs once, first embeddings computed): "
             f"p50 {r['warmup']['p50_ms']} ms, p99 {r['warmup']['p99_ms']} ms, {r['warmup']['errors']} errors.", "",
             "Malformed requests (status, then a good request's status): "
             + "; ".join(f"{k}: {v}" for k, v in r["abuse"].items()) + ".", "",
             f"Batches judged by the server: {r['server_metrics'].get('batches')} for "
             f"{r['server_metrics'].get('pairs_judged')} pairs; the token in the server's output: "
             f"{r['token_in_server_output']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""What a shared prompt prefix saves: every probe prompt read once, each timed, with or without `PrefixReuse` sharing.

`time_prompts` reads the prompts in sorted token order (as `PrefixReuse.many` does) and reports seconds and CPU seconds
a pair, the tokens a prompt has against the tokens actually read, and the first pair of a query (its prefix included)
against each further pair of it. `bench.probe_timing` runs it on the local model.
"""

from __future__ import annotations

import time


def time_prompts(embedder, prompts: list[str], queries: list[str], share: bool) -> dict:
    """Read every prompt once (sorted, as `PrefixReuse.many` reads them), each timed; `embedder` has `tokens(prompt)`
    and `reuse` (a `PrefixReuse`). The KV cache starts empty."""
    reuse = embedder.reuse
    reuse.share, reuse.held = share, []
    reuse.truncate(0)
    tokens = [embedder.tokens(p) for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: tokens[i])
    seen: set[str] = set()
    first, further, wall_all, cpu_all, fed0 = [], [], 0.0, 0.0, reuse.fed
    for i in order:
        wall, cpu = time.perf_counter(), time.process_time()
        reuse.last_state(tokens[i])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        wall_all, cpu_all = wall_all + wall, cpu_all + cpu
        (further if queries[i] in seen else first).append(wall)
        seen.add(queries[i])
    n = len(prompts)
    return {"mode": "shared" if share else "alone", "pairs": n, "queries": len(seen),
            "s_per_pair": wall_all / n, "cpu_s_per_pair": cpu_all / n,
            "prompt_tokens_per_pair": sum(map(len, tokens)) / n, "tokens_read_per_pair": (reuse.fed - fed0) / n,
            "s_first_pair_of_query": sum(first) / len(first),
            "s_further_pair_of_query": sum(further) / len(further) if further else None}

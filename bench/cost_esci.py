"""Worked cost estimate: labelling all of ESCI (~2.6M pairs, ~130k queries) with HIERA, nothing sent.

    python -m bench.cost_esci

ESCI's files are not shipped, so the prompts are rendered for ESCI's label scheme on ESCI-shaped pairs: real short
search queries (MSRD's) and item texts at the 1,500-character prompt cap (ESCI product texts, title + bullets +
description, usually exceed it; here they are real English text joined from MSRD items). Population 2,600,000 pairs
over 130,000 queries (the ESCI paper's round numbers); every item counted as distinct (an upper bound for item
analyses). Delegation 0.915 (the HIERA paper: the Judge delegates 91.5% of cases); 150 output tokens per call
(assumed). Prices: LiteLLM's local map. The paper's models under their Anthropic ids are not in that map; the same
models' Bedrock ids are.
"""

from __future__ import annotations

import dspy

import hiera_dspy  # noqa: F401  (first: hiera_dspy.settings sets the process environment litellm and dspy read)
from hiera_dspy.data import load_dataset
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import LMSpec, build_lms
from hiera_dspy.methods import BuildContext, build
from hiera_dspy.runs.cost import estimate, format_estimate

PAIRS, QUERIES = 2_600_000, 130_000
SETUPS = {
    "paper, Anthropic ids": {"judge": "anthropic/claude-3-7-sonnet-20250219", "relation":
                             "anthropic/claude-3-7-sonnet-20250219", "query": "anthropic/claude-3-5-haiku-20241022",
                             "item": "anthropic/claude-3-5-haiku-20241022"},
    "paper, Bedrock ids": {"judge": "bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0",
                           "relation": "bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0",
                           "query": "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
                           "item": "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0"},
    "gpt-4o-mini everywhere (OpenAI Batch API: --engine batch)": dict.fromkeys(
        ("judge", "relation", "query", "item"), "openai/gpt-4o-mini"),
}
CAPS = {"judge": 3000, "relation": 1500, "query": 1000, "item": 1000}  # the paper's max_tokens


def esci_shaped_pairs(n: int = 20):
    msrd = load_dataset("msrd").split("dev")
    texts = " ".join(p.item_text.replace("\n", " ") for p in msrd)
    out = []
    for i, p in enumerate(msrd[:: len(msrd) // n][:n]):
        start = (i * 1500) % (len(texts) - 1500)
        out.append(p._replace(id=f"esci-shaped-{i}", item_id=f"item-{i}", label="Exact",
                              item_text=texts[start:start + 1500]))
    return out


def main() -> None:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    scheme = get_scheme("esci")
    pairs = esci_shaped_pairs()
    for title, models in SETUPS.items():
        lms = build_lms({role: LMSpec(model, max_tokens=CAPS[role]) for role, model in models.items()})
        program = build("hiera", BuildContext(scheme, lms))
        program.method = f"hiera [{title}]"
        est = estimate(program, pairs, lms, sample=len(pairs), delegation=0.915, population=PAIRS,
                       distinct={"query": QUERIES, "item_id": PAIRS})
        print(format_estimate(est).replace("(assumed)", "(the paper's 91.5%)").replace("(given)", "(the paper's 91.5%)"))
        print(f"  per pair: {(est['input_tokens'] + est['output_tokens']) / PAIRS:,.0f} tokens, "
              f"{est['calls'] / PAIRS:.2f} LM calls\n")


if __name__ == "__main__":
    main()

"""Make the bundled probe seed: hidden states of the MSRD train pairs for the default model and today's prompt.

    python -m bench.probe_seed      # ~6 min on 2 cores (llama-cpp-python); writes hiera_dspy/data/msrd/probe-seed.npz

Run it again whenever tests/signals/test_probe_seed.py says the prompt builder drifted from the seed.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from hiera_dspy.data import load_dataset
from hiera_dspy.lm import model_store, probe_seed
from hiera_dspy.methods import BuildContext, build, probe_states


def main() -> None:
    """Embed every bundled train pair (the disk cache helps a rerun) and write the seed."""
    dataset = load_dataset("msrd")
    train = dataset.splits["train"]
    program = build("llm-probe", BuildContext(dataset.scheme, train=list(train)))
    states = program.states()
    prompts = [states.prompt(p.query, p.item_title, p.item_text, program.text_chars) for p in train]
    start = time.perf_counter()
    vectors = np.stack(states.many(prompts, progress=lambda n: print(f"{n}/{len(prompts)}", file=sys.stderr)))
    spec = model_store.get_spec(model_store.DEFAULT_MODEL)
    probe_seed.write_seed(probe_seed.SEED, [probe_states.prompt_key(p) for p in prompts], vectors,
                          model_sha256=spec.sha256, fmt=states.fmt, text_chars=program.text_chars)
    print(f"{len(prompts)} hidden states in {time.perf_counter() - start:.0f} s -> {probe_seed.SEED} "
          f"({probe_seed.SEED.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()

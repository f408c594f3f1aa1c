"""The embedded model: a GGUF file run in-process by llama.cpp, as a DSPy LM (`model.py`), acquired and verified by
`model_store.py`, through one of the llama.cpp bindings of `runtimes/`, with its GGUF metadata read by `gguf_meta.py`,
its token log-probabilities by `logprobs.py` and its prompt-prefix reuse by `prefix_reuse.py`. The hosted-LM plumbing
(roles, retry, pacing, the ledger) is `hiera_dspy.lm`, which builds this model for a role that asks for it."""

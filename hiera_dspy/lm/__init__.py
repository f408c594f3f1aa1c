"""The LM plumbing: one LM per role, the local engine and its model, retries, pacing, the response cache, the per-judgment ledger and key redaction."""

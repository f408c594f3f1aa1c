"""Untrusted text (item text, catalog rows, web results): how it enters prompts as data, and the attacks it is tested against."""

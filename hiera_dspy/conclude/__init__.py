"""From labels to conclusions: retrieval metrics per query and system, and what they allow one to conclude."""

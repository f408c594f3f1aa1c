"""Labelling: what a person sees and decides (confidence, the review queue and decisions, the human sample)."""

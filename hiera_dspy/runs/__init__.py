"""A judging run: what defines it and how it goes, with nothing stored here (that is `hiera_dspy.store`).

- `spec`: what defines a run (`RunSpec`) and the one function that turns it into a run id.
- `runner`: judging a split's pairs with worker threads, each judgment written to the run store as it finishes.
- `cost`: tokens and money of a run before it starts (`--dry-run`), with nothing sent.
- `progress`, `outputs`, `tally`: the progress bar or log lines, the output folder, metrics.json in one pass.
- `training`: which pairs a judge learns from (a split, a seeded subsample, a person's decisions).
"""

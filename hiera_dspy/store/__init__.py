"""Where state survives a crash: the run store (one SQLite file) and the files a run writes.

- `sqlite`: the one place the run-store file is opened (write connections in WAL mode, read-only snapshots).
- `run_store`: one row per judgment, committed as it finishes (`RunStore`), and the schema of the judgments table.
- `side_table`: the base of every table beside the judgments (decisions, human samples), on the same file.
- `lease`: one writer per run.
- `idset`: a compact set of pair ids for resuming million-pair runs.
- `files`: writing output files atomically.
- `freshness`: whether a labelling run's exported files are up to date (a note in the store), so a rerun costs seconds.
- `opening`: a job's store and its run, opened for a request (a RequestError naming the option otherwise).
"""

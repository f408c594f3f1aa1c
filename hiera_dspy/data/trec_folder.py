"""`trec:FOLDER`: a TREC benchmark folder (topics, corpus, qrels) as a labelled dataset.

The folder holds, in the formats of `hiera_dspy.data.trec`:
- topics: `topics.tsv` (`qid<TAB>query`) or `topics.jsonl` (`{"qid", "query"}`); `queries.*` is accepted too;
- corpus: `corpus.jsonl` or `corpus.jsonl.gz` (`{"id", "title", "text"}`; a passage needs no title);
- qrels: `qrels.txt` (or `qrels`), `qid 0 docid grade`, the grade an index of the scheme (default `trec`, 0-3).
Every judged pair is a labelled Pair (`hiera_dspy.data.judged`); a bad line of any file (a qrel for an unknown query
or passage, a passage without text, a grade outside the scheme) is a DataError naming file and line, or skipped and
counted with `--on-bad-row skip`.
"""

from __future__ import annotations

from pathlib import Path

from hiera_dspy.data import BadRows, DataError, Dataset, expect_folder
from hiera_dspy.data.judged import judged_dataset
from hiera_dspy.data.trec import read_corpus, read_qrels, read_topics
from hiera_dspy.labels import LabelScheme, get_scheme

NAMES = {  # role -> accepted file names, the first found wins (two found is an error: which one is meant?)
    "topics": ("topics.tsv", "topics.jsonl", "topics.txt", "queries.tsv", "queries.jsonl"),
    "corpus": ("corpus.jsonl", "corpus.jsonl.gz", "docs.jsonl", "docs.jsonl.gz"),
    "qrels": ("qrels.txt", "qrels", "qrels.tsv"),
}
LAYOUT = "a folder with topics.tsv (or topics.jsonl), corpus.jsonl (or corpus.jsonl.gz) and qrels.txt"


def files(folder: str | Path) -> dict[str, Path]:
    """role (topics, corpus, qrels) -> its file in `folder`; a DataError naming what is missing or ambiguous."""
    folder = expect_folder(Path(folder), LAYOUT)
    found = {}
    for role, names in NAMES.items():
        present = [folder / name for name in names if (folder / name).is_file()]
        if not present:
            raise DataError(f"{folder}: no {role} file (looked for {', '.join(names)}); expected {LAYOUT}")
        if len(present) > 1:
            raise DataError(f"{folder}: {len(present)} {role} files ({', '.join(p.name for p in present)}); "
                            f"keep one")
        found[role] = present[0]
    return found


def load(arg: str | None, scheme: LabelScheme | None, *, on_bad_row: str = "error", **_) -> Dataset:
    """The folder's judged pairs under `scheme` (default `trec`, 0-3): splits all, eval (default), train, dev."""
    if not arg:
        raise DataError(f"trec: needs a folder, e.g. --dataset trec:DL20 ({LAYOUT})")
    scheme = scheme or get_scheme("trec")
    bad = BadRows(on_bad_row)
    paths = files(arg)
    kw = dict(on_bad_row=on_bad_row, skipped=bad.rows)
    topics, corpus = read_topics(paths["topics"], **kw), read_corpus(paths["corpus"], **kw)
    lines: dict = {}
    qrels = read_qrels(paths["qrels"], scheme, lines=lines, **kw)
    return judged_dataset(f"trec:{arg}", topics, corpus, qrels, scheme, bad,
                          lambda q, d: (str(paths["qrels"]), {"line": lines[q, d]}))

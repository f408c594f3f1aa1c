"""A TREC folder's qrels as known judgments, with its own texts: `trec:FOLDER` (topics, corpus, qrels; the layout of
`hiera_dspy.data.trec_folder`), each qrels line one judgment, its passage's text from the corpus and its query's from
the topics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from hiera_dspy.data import known_qrels
from hiera_dspy.data.known import KnownJudgment
from hiera_dspy.data.trec import read_corpus, read_topics
from hiera_dspy.data.trec_folder import files
from hiera_dspy.labels import LabelScheme


def read(path: Path, scheme: LabelScheme, counts: Counter) -> Iterator[KnownJudgment]:
    """Every qrels line of the folder with the texts of its topic and passage (a passage the corpus lacks: no text)."""
    found = files(path)
    topics, corpus = read_topics(found["topics"]), read_corpus(found["corpus"])
    for j in known_qrels.read(found["qrels"], scheme, counts):
        doc = corpus.get(j.item_id)
        yield replace(j, query=topics.get(j.query_id), item_title=doc.title if doc else "",
                      item_text=doc.text if doc else None)


def looks_like(path: Path, head: str) -> bool:
    """A folder (its files are checked when it is read)."""
    return path.is_dir()

"""A retrieval benchmark's files read and cross-checked: topics, corpus, qrels and runs (or an `irds:` benchmark), as
the `Inputs` of a holes run; `tied_in_top` and `TIE_RULE` say how ties at the pool's depth are broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hiera_dspy.benchmark.runs import RunFile
from hiera_dspy.data import SKIP_HINT, BadRows, DataError
from hiera_dspy.data.irds import benchmark
from hiera_dspy.data.trec import read_corpus, read_qrels, read_topics
from hiera_dspy.errors import RequestError
from hiera_dspy.labels import LabelScheme
from hiera_dspy.records import Pair


class Inputs:
    """The benchmark's files, read and cross-checked: every run line's qid is a topic and its docid in the corpus.
    With `dataset` an `irds:ID`, topics, qrels and the documents the qrels and runs name come from ir_datasets
    (`hiera_dspy.data.irds`) instead of the three files."""

    def __init__(self, topics: str | None, corpus: str | None, qrels: str | None, runs: list[str],
                 scheme: LabelScheme, on_bad_row: str = "error", dataset: str | None = None):
        self.skipped: list[dict] = []
        self.qrel_lines: dict[tuple[str, str], int] = {}  # (qid, docid) -> its qrels line (a file's qrels only)
        self._noted: set[tuple[str, int]] = set()
        kw = dict(on_bad_row=on_bad_row, skipped=self.skipped)
        if dataset and dataset.startswith("irds:"):
            retrieved = {rl.docid for path in runs for rl in RunFile(path, on_bad_row="skip", skipped=[])}
            bad = BadRows(on_bad_row)
            self.topics, self.corpus, self.qrels, _ = benchmark(dataset.partition(":")[2], scheme, bad, retrieved)
            self.skipped += bad.rows
        else:
            self.topics = read_topics(topics, **kw)
            self.corpus = read_corpus(corpus, **kw)
            self.qrels = read_qrels(qrels, scheme, lines=self.qrel_lines, **kw)
        self.runs: dict[str, RunFile] = {}  # read one query at a time, each time they are used
        for path in runs:
            name = Path(path).stem if Path(path).stem not in self.runs else path
            self.runs[name] = RunFile(path, keep=lambda p, rl: self._known(p, rl, on_bad_row), **kw).check()

    def _known(self, path: str, rl, on_bad_row: str) -> bool:
        problem = (f"qid {rl.qid!r} is not in the topics (a run ranks the benchmark's own queries)"
                   if rl.qid not in self.topics else
                   f"docid {rl.docid!r} is not in the corpus (give the corpus the runs retrieved from)"
                   if rl.docid not in self.corpus else None)
        if problem is None:
            return True
        if on_bad_row != "skip":
            raise DataError(f"{path}, line {rl.line}: {problem}; {SKIP_HINT}")
        if (path, rl.line) not in self._noted:  # a run file is read several times: note a bad line once
            self._noted.add((path, rl.line))
            self.skipped.append({"file": path, "line": rl.line, "error": problem})
        return False

    def pair(self, qid: str, docid: str, label: str | None = None) -> Pair:
        """The pair of a topic and a corpus document (id `qid:docid`)."""
        doc = self.corpus[docid]
        return Pair(id=f"{qid}:{docid}", query=self.topics[qid], item_title=doc.title, item_text=doc.text,
                    label=label, query_id=qid, item_id=docid)

    def judged_pairs(self, scheme: LabelScheme) -> list[Pair]:
        """The existing judgments whose topic and document are known: the train pairs of learned methods."""
        return [self.pair(q, d, scheme.labels[g]) for (q, d), g in self.qrels.items()
                if q in self.topics and d in self.corpus]

TIE_RULE = "ranked by docid, descending (trec_eval's rule, which ir_measures follows)"

def tied_in_top(run: RunFile, depth: int) -> int:
    """Documents in a run's top `depth` (per query) whose score equals a neighbour's within the top `depth + 1`: the
    tie rule (`TIE_RULE`, hiera_dspy.data.trec.ranked), not the scores, decides their order and hence the holes."""
    tied = 0
    for _, lines in run.groups():
        top = lines[:depth + 1]
        tied += sum(1 for i, rl in enumerate(top[:depth])
                    if (i and top[i - 1].score == rl.score) or (i + 1 < len(top) and top[i + 1].score == rl.score))
    return tied

def read_inputs(labelling: Mapping, scheme: LabelScheme) -> Inputs:
    """The benchmark files a labelling config names; a data error exits with its message."""
    try:
        return Inputs(labelling["topics"], labelling["corpus"], labelling["qrels"], labelling["runs"], scheme,
                      labelling.get("on_bad_row", "error"), labelling.get("dataset"))
    except DataError as exc:
        raise RequestError(str(exc)) from None

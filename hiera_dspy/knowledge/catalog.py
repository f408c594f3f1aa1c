"""BM25 over the dataset's own catalog (MSRD: the bundled movie catalog; ESCI/WANDS/Home Depot: the product table)."""

from __future__ import annotations

import threading

import bm25s

from hiera_dspy.knowledge import Passage


class CatalogKnowledge:
    """BM25 search over a dataset's own catalog (e.g. MSRD's movie corpus)."""
    default_k = 3  # passages per look-up unless asked: the catalog's rows are long, small models' contexts are not

    def __deepcopy__(self, memo):  # shared by every copy an optimizer makes of a program
        return self

    def __init__(self, entries, name: str = "catalog"):
        self.name = name
        self.entries = list(entries)
        self._lock = threading.Lock()
        self._retriever = None  # indexed on first search: loading a judge costs nothing until it looks something up

    @property
    def retriever(self):
        """The BM25 index of the catalog, built on first use."""
        if self._retriever is None:
            corpus = [f"{e.title}\n{e.text}" for e in self.entries]
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
            self._retriever = retriever
        return self._retriever

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        """Up to `k` catalog entries matching `text` (only those with a positive score)."""
        if not text.strip():
            return []
        k = min(self.default_k if k is None else k, len(self.entries))
        with self._lock:  # bm25s retrieval is not documented as thread-safe
            retriever = self.retriever
            tokens = bm25s.tokenize([text], stopwords="en", show_progress=False)
            if not tokens.vocab:
                return []
            docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        return [Passage(title=self.entries[i].title, text=self.entries[i].text, source=self.name,
                        url=f"{self.name}#{self.entries[i].id}")
                for i, score in zip(docs[0], scores[0]) if score > 0]

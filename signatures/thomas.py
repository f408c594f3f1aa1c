"""The contract of the field's reference judge (`thomas`): the procedure Thomas et al. published (SIGIR 2024, "Large
language models can accurately predict searcher preferences") and UMBRELA follows on TREC Deep Learning, in this
project's own words. Signatures only.

The steps: say what the searcher behind the query wants; score how well the passage meets that want (M) and how far
it can be trusted (T); then give one final grade on the scheme's scale (`grade_scale`: grade i = the scheme's i-th
label, least relevant first, with its definition; 0-3 for TREC's four grades).
"""

from __future__ import annotations

import dspy

from signatures.hiera import DATA_NOTE


class IntentMatchTrustGrade(dspy.Signature):
    """You grade search results for the people who build a search engine. Picture the person who typed the query:
    state in one sentence what they are trying to find out or get done. Then look at the item with that need in
    mind and give two scores: match (M), how much of the need the item meets, and trust (T), how far a reader could
    rely on what the item says. Weigh the two (an item that does not meet the need gets the lowest grade, however
    trustworthy) and give one final grade from the grade scale."""

    query: str = dspy.InputField()
    item: str = dspy.InputField(desc=DATA_NOTE)
    grade_scale: str = dspy.InputField(desc="the grades, lowest first: 'grade = label: definition' per line")
    intent: str = dspy.OutputField(desc="one sentence: what the searcher wants")
    match: int = dspy.OutputField(desc="M: 0 (misses the need) to 2 (meets it fully)")
    trust: int = dspy.OutputField(desc="T: 0 (cannot be relied on) to 2 (reliable)")
    grade: int = dspy.OutputField(desc="the final grade: one whole number of the grade scale")

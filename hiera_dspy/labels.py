"""Label schemes: ordered label strings, their definitions, and the mapping from raw dataset values.

Labels are strings inside the program (DSPy cannot parse integer Literals); each dataset's raw values are mapped here.
Definitions are quoted verbatim from each dataset's own documentation (" … " marks an elision).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hiera_dspy.errors import HieraError
from hiera_dspy.registry import Entry, Registry


@dataclass(frozen=True)
class LabelScheme:
    """An ordered set of relevance labels, least relevant first.

    Example:
        >>> scheme = get_scheme("wands")
        >>> scheme.from_raw("Partial")
        'Partial'
    """

    name: str
    labels: tuple[str, ...]
    definitions: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    raw_map: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    source: str = ""
    # For binary views (DREAM, binary-graded) and P@k: labels at or above this one count as relevant.
    relevant_from: str | None = None
    # nDCG's gain of each label, in label order (None: the grade, 0 .. K-1, trec_eval's linear gains).
    gains: tuple[float, ...] | None = None
    # A team's guidelines (hiera_dspy/data/guidelines.py): free instructions, worked examples ({query, item, grade,
    # why}), and the SHA-256 prefix of the file they came from (part of every run id; None for a built-in scheme).
    instructions: str = field(default="", compare=False)
    examples: tuple[dict, ...] = field(default=(), hash=False, compare=False)
    guidelines: str | None = None

    def __post_init__(self):
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
            raise HieraError(f"label scheme {self.name!r} needs at least two distinct labels, got {self.labels}")
        if self.gains is not None and (len(self.gains) != len(self.labels) or list(self.gains) != sorted(self.gains)
                                       or min(self.gains) < 0):
            raise HieraError(f"label scheme {self.name!r}: gains {self.gains} need one non-negative, non-decreasing "
                             f"value per label {self.labels}")

    def gain(self, grade: int) -> float:
        """nDCG's gain of the label at index `grade` (the scheme's `gains`, else the grade itself)."""
        return float(self.gains[grade]) if self.gains is not None else float(grade)

    def gain_map(self) -> dict[int, int] | None:
        """The gains as ir_measures' `nDCG(gains=...)` takes them (pytrec_eval wants integers: scaled by the power of
        ten that makes them whole, which leaves nDCG unchanged); None for the grade gains (plain nDCG)."""
        if self.gains is None or all(g == i for i, g in enumerate(self.gains)):
            return None
        for power in range(7):
            scaled = [g * 10 ** power for g in self.gains]
            if all(abs(v - round(v)) < 1e-9 for v in scaled):
                return {i: int(round(v)) for i, v in enumerate(scaled)}
        raise HieraError(f"label scheme {self.name!r}: gains {self.gains} need at most 6 decimals")

    @property
    def literal(self):
        """The `Literal[...]` type used as the output type of every label field."""
        return Literal[self.labels]  # type: ignore[valid-type]

    def from_raw(self, raw) -> str:
        """Map a raw dataset value (e.g. 'E', 1, '1') to a label string; raise ValueError with the allowed values."""
        key = str(raw).strip()
        if key in self.labels:
            return key
        if key in self.raw_map:
            return self.raw_map[key]
        lowered = {label.lower(): label for label in self.labels}
        if key.lower() in lowered:
            return lowered[key.lower()]
        allowed = sorted(set(self.labels) | set(self.raw_map))
        raise HieraError(f"unknown label {raw!r} for scheme {self.name!r}; expected one of {allowed}")

    def describe(self) -> str:
        """Label definitions as prompt text, least relevant first, then the guidelines' instructions and worked
        examples (`guidance`), each verbatim: every method's prompt reads the scheme's own text."""
        lines = "\n".join(f"- {label}: {self.definitions.get(label, '')}".rstrip(": ") for label in self.labels)
        return lines + self.guidance()

    def guidance(self) -> str:
        """The instructions and worked examples of a team's guidelines as prompt text ("" for a scheme without)."""
        text = f"\nInstructions: {self.instructions}" if self.instructions else ""
        if self.examples:
            text += "\nWorked examples:" + "".join(
                f"\n- query: {e['query']} | item: {e['item']} -> {e['grade']}" + (f" ({e['why']})" if e.get("why")
                                                                                else "")
                for e in self.examples)
        return text

    @property
    def threshold(self) -> str:
        """The lowest label that counts as relevant (`relevant_from`, else the top label)."""
        return self.relevant_from or self.labels[-1]

    def is_relevant(self, label: str) -> bool:
        """Whether `label` is at or above the scheme's relevance threshold."""
        return self.labels.index(label) >= self.labels.index(self.threshold)

    @property
    def binary_from(self) -> int:
        """The binary view's cut: the index of the lowest relevant label (TREC: grade 2). Grades below it read as
        "not relevant", the others as "relevant" (binary kappa, P@k, DREAM's question)."""
        return self.labels.index(self.threshold)

    def binary(self, label: str | None) -> str | None:
        """A label in the binary view: BINARY[1] ("relevant") at or above the threshold, else BINARY[0]; None stays
        None (a judgment without a label)."""
        return None if label is None else BINARY[self.is_relevant(label)]

    def to_dict(self) -> dict:
        """The scheme as JSON-ready data (recorded in artifacts and run configs)."""
        data: dict[str, Any] = {"name": self.name, "labels": list(self.labels), "definitions": self.definitions,
                "raw_map": self.raw_map, "source": self.source, "relevant_from": self.relevant_from}
        if self.gains is not None:  # earlier records stay the same: a key only where it says something
            data["gains"] = list(self.gains)
        if self.guidelines is not None:
            data.update(instructions=self.instructions, examples=[dict(e) for e in self.examples],
                        guidelines=self.guidelines)
        return data

    @classmethod
    def from_dict(cls, d: dict) -> "LabelScheme":
        """The scheme `to_dict` wrote."""
        return cls(name=d["name"], labels=tuple(d["labels"]), definitions=dict(d.get("definitions", {})),
                   raw_map=dict(d.get("raw_map", {})), source=d.get("source", ""), relevant_from=d.get("relevant_from"),
                   gains=tuple(d["gains"]) if d.get("gains") is not None else None,
                   instructions=d.get("instructions", ""), examples=tuple(dict(e) for e in d.get("examples") or ()),
                   guidelines=d.get("guidelines"))


BINARY = ("not relevant", "relevant")  # the labels of every scheme's binary view, least relevant first
SCHEMES: dict[str, LabelScheme] = {}


def register(scheme: LabelScheme) -> LabelScheme:
    """Add a scheme to the built-in registry under its name; returns it."""
    SCHEMES[scheme.name] = scheme
    return scheme


# Definitions are the sources' own words: a verbatim quote, " … " marking an elision (tests/fixtures/label_sources.py
# holds each source's passage and checks every definition against it).
register(LabelScheme(
    name="msrd",
    labels=("Irrelevant", "Relevant"),
    definitions={
        "Irrelevant": "not relevant",
        "Relevant": "relevant result for the movie search query … binary relevance annotations for movie search "
                    "covering actors, directors, genres, themes, and cultural references",
    },
    raw_map={"0": "Irrelevant", "1": "Relevant"},
    source="MSRD (metarank/msrd), binary relevance as in the HIERA paper (arXiv 2608.00785, Sec. 5.1: \"MSRD contains "
           "binary relevance annotations for movie search covering actors, directors, genres, themes, and cultural "
           "references\"); label 1 = \"relevant result for the movie search query\", 0 = \"not relevant\"",
))

register(LabelScheme(
    name="esci",
    labels=("Irrelevant", "Complement", "Substitute", "Exact"),
    definitions={
        "Exact": "the item is relevant for the query, and satisfies all the query specifications",
        "Substitute": "the item is somewhat relevant: it fails to fulfill some aspects of the query but the item can "
                      "be used as a functional substitute",
        "Complement": "the item does not fulfill the query, but could be used in combination with an exact item",
        "Irrelevant": "the item is irrelevant, or it fails to fulfill a central aspect of the query",
    },
    raw_map={"E": "Exact", "S": "Substitute", "C": "Complement", "I": "Irrelevant"},
    source="Reddy et al. 2022, Shopping Queries Dataset (arXiv 2206.06588), the ESCI label definitions; nDCG gains "
           "E 1.0, S 0.1, C 0.01, I 0.0 as the paper's Task 1 (query-product ranking) defines them",
    relevant_from="Substitute",
    gains=(0.0, 0.01, 0.1, 1.0),
))

register(LabelScheme(
    name="wands",
    labels=("Irrelevant", "Partial", "Exact"),
    definitions={
        "Exact": "The surfaced product fully matches the search query.",
        "Partial": "The surfaced product does not fully match the search query. It only matches the target entity of "
                   "the query, but does not satisfy the modifiers for the query.",
        "Irrelevant": "The product is not relevant to the query.",
    },
    source="Chen et al. 2022, WANDS: Dataset for Product Search Relevance Assessment (ECIR 2022; wayfair/WANDS), "
           "the Exact match / Partial match / Irrelevant definitions",
    relevant_from="Partial",
))

register(LabelScheme(
    name="homedepot",
    labels=("Irrelevant", "Partially relevant", "Highly relevant"),
    definitions={
        "Irrelevant": '1 (not relevant) … a search for "AA battery" would be considered … not relevant to a snow '
                      'shovel (relevance = 1)',
        "Partially relevant": 'a search for "AA battery" would be considered … mildly relevant to a cordless drill '
                              'battery (relevance = 2)',
        "Highly relevant": '3 (highly relevant). For example, a search for "AA battery" would be considered highly '
                           'relevant to a pack of size AA batteries (relevance = 3)',
    },
    raw_map={"1": "Irrelevant", "2": "Partially relevant", "3": "Highly relevant"},
    source="Home Depot Product Search Relevance (Kaggle), the competition's data description; the mean of the "
           "raters' 1-3 scores binned by rounding half up (< 1.5 -> 1, 1.5 to < 2.5 -> 2, >= 2.5 -> 3)",
    relevant_from="Partially relevant",
))


register(LabelScheme(
    name="trec",
    labels=("Irrelevant", "Related", "Highly relevant", "Perfectly relevant"),
    definitions={
        "Perfectly relevant": "The passage is dedicated to the query and contains the exact answer.",
        "Highly relevant": "The passage has some answer for the query, but the answer may be a bit unclear, or hidden "
                           "amongst extraneous information.",
        "Related": "The passage seems related to the query but does not answer it.",
        "Irrelevant": "The passage has nothing to do with the query.",
    },
    raw_map={"0": "Irrelevant", "1": "Related", "2": "Highly relevant", "3": "Perfectly relevant"},
    source="TREC Deep Learning track (Craswell et al., Overview of the TREC 2019 Deep Learning Track), the passage "
           "judging scale 0-3; binary measures count grade 2 and up as relevant, as the track does for passages",
    relevant_from="Highly relevant",
))


def custom_scheme(spec: str, name: str = "custom") -> LabelScheme:
    """A scheme from `--labels "A,B,C"` (least relevant first); raw values may be the labels or their 0-based index."""
    labels = tuple(part.strip() for part in spec.split(",") if part.strip())
    if len(labels) < 2:
        raise HieraError(f'--labels needs at least two comma-separated labels, least relevant first; got {spec!r}')
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise HieraError(f"labels {spec!r} (field `labels`, flag --labels): {', '.join(map(repr, repeated))} is given "
                         "twice; name each label once, least relevant first, e.g. 'Bad,Fair,Good'")
    return LabelScheme(name=name, labels=labels, raw_map={str(i): label for i, label in enumerate(labels)},
                       source="user-defined via --labels")


def get_scheme(name: str) -> LabelScheme:
    """A registered scheme by name; `UnknownName` (a KeyError) naming the built-in ones otherwise."""
    return SCHEME_REGISTRY[name].load()


# the schemes as a registry (hiera_dspy.registry), read from SCHEMES: a `register` call is a scheme here
SCHEME_REGISTRY = Registry("label scheme", lambda: {name: Entry(name, " < ".join(s.labels), loader=s)
                                                    for name, s in sorted(SCHEMES.items())},
                           hint=" (or pass --labels 'A,B,C')")

"""Shared helpers for the method tests: label schemes, a few labelled train pairs, a fake knowledge source, and a
BuildContext whose role LMs are fake LMs (no model, no network)."""

from hiera_dspy.lm import ledger
from hiera_dspy.knowledge import Passage
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import BuildContext
from hiera_dspy import testing
from hiera_dspy.testing import fake_lm
from hiera_dspy.types import Pair

SCHEMES = ("msrd", "esci")
FACT = "ZEBRA-FACT-42"


class FakeKnowledge(testing.FakeKnowledge):
    """One passage carrying FACT about whatever was searched."""

    def __init__(self):
        super().__init__(lambda text: [Passage(title="Zebra notes", text=f"{FACT} about {text}", source="fake")],
                         name="fake")


def train_pairs(scheme, per_label=2):
    return [Pair(f"t{label}{i}", f"query {label} {i}", f"Title {label} {i}", f"text about {label}", label,
                 f"q{label}{i}", f"i{label}{i}") for label in scheme.labels for i in range(per_label)]


def make_ctx(scheme_name="msrd", answers=None, knowledge=None, train=None, ensemble=None, **role_lms):
    """A BuildContext with a fake judge LM answering `answers` (plus any other role LMs given, and an `ensemble`
    pool: name -> LM); returns (ctx, lm)."""
    scheme = get_scheme(scheme_name)
    lm = fake_lm(answers or {})
    lms = RoleLMs.of(judge=lm, ensemble=ensemble, **role_lms)
    ctx = BuildContext(scheme=scheme, lms=lms, train=train_pairs(scheme) if train is None else train,
                       **({"knowledge": knowledge} if knowledge is not None else {}))
    return ctx, lm


def judge(program, query="red running shoes", title="Trail Runner", text="A red running shoe."):
    """Run one judgment under a fresh ledger; return (prediction, ledger)."""
    book = ledger.Ledger()
    with ledger.bind(book):
        prediction = program(query=query, item_title=title, item_text=text)
    return prediction, book


def prompts(lm):
    """Every message text sent to a fake LM (system and user)."""
    return [m["content"] for h in lm.history for m in h["messages"]]

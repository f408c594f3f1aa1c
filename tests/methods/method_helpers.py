"""Shared helpers for the method tests: label schemes, a fake knowledge source carrying a fact, a BuildContext whose
role LMs are fake LMs (no model, no network), and one judgment of a default pair. The generic pieces live in the
library's test kit, hiera_dspy/testing.py."""

from hiera_dspy import testing
from hiera_dspy.knowledge import Passage
from hiera_dspy.labels import get_scheme
from hiera_dspy.lm.roles import RoleLMs
from hiera_dspy.methods import BuildContext
from hiera_dspy.testing import fake_lm

SCHEMES = ("msrd", "esci")
FACT = "ZEBRA-FACT-42"


class FakeKnowledge(testing.FakeKnowledge):
    """One passage carrying FACT about whatever was searched."""

    def __init__(self):
        super().__init__(lambda text: [Passage(title="Zebra notes", text=f"{FACT} about {text}", source="fake")],
                         name="fake")


def make_ctx(scheme_name="msrd", answers=None, knowledge=None, train=None, ensemble=None, **role_lms):
    """A BuildContext with a fake judge LM answering `answers` (plus any other role LMs given, and an `ensemble`
    pool: name -> LM); returns (ctx, lm)."""
    scheme = get_scheme(scheme_name)
    lm = fake_lm(answers or {})
    lms = RoleLMs.of(judge=lm, ensemble=ensemble, **role_lms)
    ctx = BuildContext(scheme=scheme, lms=lms, train=testing.labelled_pairs(scheme) if train is None else train,
                       **({"knowledge": knowledge} if knowledge is not None else {}))
    return ctx, lm


def judge(program, query="red running shoes", title="Trail Runner", text="A red running shoe."):
    """One judgment of the method tests' default pair (or the parts given); returns (prediction, ledger)."""
    return testing.judge_once(program, query=query, item_title=title, item_text=text)

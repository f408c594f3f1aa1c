"""`hiera-react`: the paper's own implementation style (LangGraph + ReAct, Appendix A.1) as an alternative graph.

The Judge is a ReAct agent whose one tool is the Relation Analyzer; the Relation Analyzer is a ReAct agent whose tools
are the Query Analyzer, the Item Analyzer (each asked a question about the pair, each with its own bounded, cached,
accounted look-ups, paper A.1) and knowledge search. Same specialists as the planned `hiera`; the agents choose their
own consultations turn by turn. Small models often break ReAct's tool-call format: measure it.
"""

from __future__ import annotations

import contextvars

import dspy

import signatures
from hiera_dspy.agents import ItemAnalyzer, QueryAnalyzer, lookup
from hiera_dspy.knowledge import render
from hiera_dspy.lm import profiles
from hiera_dspy.methods import BuildContext, register
from hiera_dspy.untrusted.blocks import item_block
from signatures.hiera import JudgeDecision, RelationSynthesis

# The pair being judged, per thread/task: tools are called without it, and one program serves many worker threads.
_PAIR: contextvars.ContextVar[dict] = contextvars.ContextVar("hiera_react_pair")


class RelationAgent(dspy.Module):
    """R as a ReAct agent: consults Q, I and knowledge as tools, then writes the argument."""

    def __init__(self, ctx: BuildContext, k: int | None, max_iters: int, specialist_lookups: int = 1,
                 profile: str = "auto"):
        super().__init__()
        self.lms, self.knowledge, self.k = ctx.lms, ctx.knowledge, k
        own = dict(profile=profile, knowledge=ctx.knowledge, k=k, max_lookups=specialist_lookups, directed=True)
        self.query_analyzer = QueryAnalyzer(ctx.lms, **own)
        self.item_analyzer = ItemAnalyzer(ctx.lms, **own)
        sig = profiles.fit(RelationSynthesis.delete("findings"), profiles.resolve(profile, ctx.lms, "relation"))
        self.agent = dspy.ReAct(sig, tools=[self.ask_query_analyzer, self.ask_item_analyzer, self.search_knowledge],
                                max_iters=max_iters)

    def ask_query_analyzer(self, question: str) -> str:
        """Ask the Query Analyzer a question about the searcher's intent for the pair being judged (it may look
        things up itself)."""
        pair = _PAIR.get()
        return self.query_analyzer.ask(question, pair["query"], pair["item"]).answer

    def ask_item_analyzer(self, question: str) -> str:
        """Ask the Item Analyzer to verify something about the item for the pair being judged (it may look things
        up itself)."""
        pair = _PAIR.get()
        return self.item_analyzer.ask(question, pair["query"], pair["item"]).answer

    def search_knowledge(self, lookup_text: str) -> str:
        """Search the knowledge source (web or the dataset's catalog) for a short look-up string."""
        return render(lookup(self.knowledge, [lookup_text], self.k)) or "(nothing found)"

    def forward(self, query: str, item: str, guidance: str) -> dspy.Prediction:
        """Returns the ReAct agent's relation analysis (its tools: the specialists and the knowledge source)."""
        from hiera_dspy.lm import steps

        with steps.step("relation.react", "relation", self.lms.for_role("relation")):
            return self.agent(query=query, item=item, guidance=guidance)


class HieraReact(dspy.Module):
    """HIERA with ReAct agents: the Judge decides when to consult the Relation Analyzer, which picks its own tools."""
    def __init__(self, ctx: BuildContext, k: int | None = None, max_iters: int = 4, specialist_lookups: int = 1,
                 profile: str = "auto"):
        super().__init__()
        self.lms = ctx.lms
        self.scheme = ctx.scheme
        self.relation = RelationAgent(ctx, k, max_iters, specialist_lookups, profile)
        decision = signatures.with_labels(JudgeDecision, ctx.scheme).delete("evidence").delete("triage")
        self.judge = dspy.ReAct(decision, tools=[self.consult_relation_analyzer], max_iters=max_iters)

    def consult_relation_analyzer(self, guidance: str) -> str:
        """Delegate to the Relation Analyzer, naming the unclear dimensions (query intent, item information,
        query-item relation); it returns one structured relevance argument."""
        pair = _PAIR.get()
        pair["consulted"] = True
        return self.relation(query=pair["query"], item=pair["item"], guidance=guidance).argument

    def forward(self, query: str, item_title: str, item_text: str) -> dspy.Prediction:
        """Returns the Judge's label, whether it consulted the Relation Analyzer, and the ReAct trajectory."""
        from hiera_dspy.lm import steps

        item = item_block(item_title, item_text)
        token = _PAIR.set({"query": query, "item": item, "consulted": False})
        try:
            with steps.step("judge.react", "judge", self.lms.for_role("judge")):
                out = self.judge(query=query, item=item, label_definitions=self.scheme.describe())
            return dspy.Prediction(label=out.label, delegated=_PAIR.get()["consulted"], trajectory=out.trajectory)
        finally:
            _PAIR.reset(token)


register("hiera-react", "HIERA as nested ReAct agents, the paper's implementation style (arXiv 2608.00785, A.1)",
         family="hiera", k=None, max_iters=4, specialist_lookups=1, profile="auto")(
             lambda ctx, **config: HieraReact(ctx, **config))

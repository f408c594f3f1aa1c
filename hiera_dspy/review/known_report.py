"""What a judging job's report says of known judgments (the `use` of `hiera_dspy.data.known_evidence`): whether
the judge read them, how many each query had and how many the judge read, and what was counted on the way."""

from __future__ import annotations

TABLE_QUERIES = 200  # more queries than this: the per-query counts stay in summary.json / metrics.json only
BINARY_LOOK = 20  # known judgments at least, all in a graded scheme's two lowest grades: the list may be binary


def known_line(use: dict | None) -> str:
    """One sentence: what the judge read (or that it reads none); '' without known judgments."""
    if not use:
        return ""
    head = (f"Known judgments ({use['source']}): {use['judgments']} given, {use['in_set']} of them for "
            f"{use['queries_with_known']} of the {use['queries']} queries judged; ")
    if not use["reads"]:
        return head + "the judge does not read known judgments: every pair was judged alone, none was used."
    if use.get("demos"):
        return head + (f"the LLM method read up to {use['demos']['known_demos']} of a pair's query's as worked "
                       f"examples in its prompts ({use['read']} readable, for {use['queries_read']} queries; never the "
                       "pair's own).")
    return head + (f"the judge read {use['read']} as evidence, for {use['queries_read']} queries (a query without "
                   "any was judged as without known judgments).")


def counted(use: dict) -> str:
    """The counts of reading and checking the list, as a sentence, and the warning of `binary_look` ('' when there
    is nothing to say)."""
    parts = []
    if use.get("text_matched_queries"):
        parts.append(f"{use['text_matched_queries']} of the list's queries matched to the pairs' by their text (the "
                     "list names them otherwise)")
    if use.get("overlap_skipped"):
        parts.append(f"{use['overlap_skipped']} judgments of pairs that were also to be judged, dropped from the "
                     "known judgments (--on-known-overlap skip)")
    if use.get("without_text"):
        parts.append(f"{use['without_text']} judgments whose item text was not found (not readable as evidence)")
    if use.get("duplicates"):
        parts.append(f"{use['duplicates']} repeated lines with the same grade (read once)")
    if use.get("unlabelled"):
        parts.append(f"{use['unlabelled']} rows without a label (no judgment)")
    return " ".join(filter(None, (unmatched(use), ("Counted: " + "; ".join(parts) + ".") if parts else "",
                                  binary_look(use))))


def unmatched(use: dict) -> str:
    """A warning when some of the list's queries match no query of the pairs, by id or by text ('' when all do)."""
    if not use.get("outside_queries"):
        return ""
    total = use.get("matched_queries", 0) + use["outside_queries"]
    return (f"Warning: {use['outside_queries']} of the list's {total} queries match no query of the pairs to judge, "
            f"by id or by text: their {use['outside']} judgments inform no judgment here (kept for calibration; "
            "judging went on).")


def binary_look(use: dict) -> str:
    """A warning when every known judgment of a scheme of three or more grades is in its two lowest ones, as a
    binary list (0/1) read on a graded scale is: its relevant pairs would be read as the second-lowest grade
    ('' otherwise: the values are valid grades, so this is no error)."""
    grades = use.get("grades") or {}
    labels = list(grades)
    total = sum(grades.values())
    if len(labels) < 3 or total < BINARY_LOOK or any(grades[label] for label in labels[2:]):
        return ""
    return (f"Every one of the {total} known judgments is graded {labels[0]!r} or {labels[1]!r}, the two lowest of "
            f"{len(labels)} grades: if the list is binary (1 = relevant), map its relevant grade onto the scheme's "
            "(e.g. 1 -> 2 for TREC's 0-3) or judge on a two-grade scheme; as it is, the judge reads its relevant pairs "
            f"as {labels[1]!r}.")


KIND_WORDS = {"sample": "a random sample of the pairs", "pool": "a pool (the top of some systems' runs)"}


def shares_line(use: dict | None) -> str:
    """What the known judgments were taken to be, and the share of relevant pairs the judge cut at: estimated, with
    its interval, beside the known judgments' own ('' when the judge did not cut at estimated shares)."""
    shares = (use or {}).get("shares")
    if not shares:
        return ""
    check, b = shares["check"], shares["binary_from"] - 1
    how = ("your word (--known-kind)" if shares["kind"] != "auto" else
           f"checked: the known pairs sit above the pairs to judge in {check['auc']:.0%} of comparisons" if
           check.get("auc") is not None else "assumed")
    copied = ("" if shares["assumed"] == "sample" else " (a pool's shares are not the pairs': not copied)")
    return (f"The known judgments were taken as {KIND_WORDS[shares['assumed']]}, by {how}. Estimated share of the "
            f"pairs at {shares['labels'][b + 1]!r} or above: {shares['at_least'][b]:.1%} "
            f"[{shares['low'][b]:.1%}, {shares['high'][b]:.1%}] ({shares['method']}; {shares['pairs_sampled']} pairs "
            f"to judge sampled); the known judgments' own: {shares['known_at_least'][b]:.1%}{copied}. The judge's "
            + (("grades were cut at the estimated shares, one boundary at a time"
                + (", leaning as the judge learned its best cut leans" if shares["assumed"] == "sample" else "")
                + f": {shares['cut_at_least'][b]:.1%} called so; ") if shares.get("cut", True) else
               "grades were not cut at it (on a binary scale a pool's estimate is less sure than the compiled thresholds); ")
            + f"at its compiled thresholds the judge calls {shares['compiled_cut_at_least'][b]:.1%} so (the fill's "
            f"estimated bias there: {shares['compiled_cut_at_least'][b] - shares['at_least'][b]:+.1%}).")


def shares_table(use: dict | None) -> list[str]:
    """report.md's table of the grade shares: estimated (with the interval of grade >= k) and the known's own."""
    shares = (use or {}).get("shares")
    if not shares:
        return []
    lines = ["", "| grade | estimated share | share at or above [interval] | known judgments' share |",
             "|---|---|---|---|"]
    for g, label in enumerate(shares["labels"]):
        above = ("" if g == 0 else f"{shares['at_least'][g - 1]:.1%} [{shares['low'][g - 1]:.1%}, "
                 f"{shares['high'][g - 1]:.1%}]")
        lines.append(f"| {label} | {shares['grades'][g]:.1%} | {above} | {shares['known_grades'][g]:.1%} |")
    return lines


def known_summary(use: dict | None) -> str:
    """The sentence and the counts, for a command's closing lines ('' without known judgments)."""
    return " ".join(filter(None, (known_line(use), counted(use) if use else "", shares_line(use))))


def known_section(use: dict | None) -> list[str]:
    """report.md's section on known judgments: the sentence, the counts, and per query the known judgments and those
    the judge read (up to TABLE_QUERIES queries; all of them in the summary's `known`)."""
    if not use:
        return []
    lines = ["## Known judgments", "", known_line(use)]
    if note := counted(use):
        lines.append(note)
    if note := shares_line(use):
        lines += ["", note, *shares_table(use)]
    given, read = use["known_per_query"], use["read_per_query"]
    if len(given) <= TABLE_QUERIES:
        lines += ["", "| query | known | read by the judge |", "|---|---|---|"]
        lines += [f"| {q} | {n} | {read.get(q, 0)} |" for q, n in given.items()]
    else:
        lines.append(f"Per query ({len(given)} queries): summary.json `known.known_per_query` and "
                     "`known.read_per_query`.")
    return [*lines, ""]

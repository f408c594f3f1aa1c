"""What a judging job's report says of known judgments (the `use` of `hiera_dspy.review.known_evidence`): whether
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


def known_summary(use: dict | None) -> str:
    """The sentence and the counts, for a command's closing lines ('' without known judgments)."""
    return " ".join(filter(None, (known_line(use), counted(use) if use else "")))


def known_section(use: dict | None) -> list[str]:
    """report.md's section on known judgments: the sentence, the counts, and per query the known judgments and those
    the judge read (up to TABLE_QUERIES queries; all of them in the summary's `known`)."""
    if not use:
        return []
    lines = ["## Known judgments", "", known_line(use)]
    if note := counted(use):
        lines.append(note)
    given, read = use["known_per_query"], use["read_per_query"]
    if len(given) <= TABLE_QUERIES:
        lines += ["", "| query | known | read by the judge |", "|---|---|---|"]
        lines += [f"| {q} | {n} | {read.get(q, 0)} |" for q, n in given.items()]
    else:
        lines.append(f"Per query ({len(given)} queries): summary.json `known.known_per_query` and "
                     "`known.read_per_query`.")
    return [*lines, ""]

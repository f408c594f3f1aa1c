"""Untrusted text (item fields, catalog rows, web results): how it is made safe before anything reads it.

- `normalise`: Unicode folding (NFKC, look-alike letters), invisible, control and bidi characters removed, whitespace
  collapsed; the first thing done to any field.
- `filters`: the sentence filters (orders to the assessor in several languages, relevance claims about the query).
- `stuffing`: repeated lines and words, hidden lists and query echoes de-duplicated or removed.
- `screen`: the three above for a whole item (title included), with the flags that say what was changed.
- `blocks`: the item as a delimited data block in a prompt (`item_block`, `as_data`).
- `attacks`, `families`: hostile item texts for tests and the benchmarks (bench/injection.py, bench/manipulation.py).
- `rewordings`: benign edits (availability lines, field order, case, labels, typography) a judge should not move
  with (bench/stability.py).
"""

from hiera_dspy.untrusted.blocks import ITEM_TEXT_BUDGET, TASK_AFTER_DATA, as_data, item_block, neutralise

__all__ = ["ITEM_TEXT_BUDGET", "TASK_AFTER_DATA", "as_data", "item_block", "neutralise"]

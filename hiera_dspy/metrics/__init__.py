"""Agreement with gold labels, classification metrics with CIs, and how numbers are printed."""

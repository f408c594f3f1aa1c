"""A retrieval benchmark with holes, as eval.holes reads, pools, samples and writes it: its files read and checked
(`inputs`, `runs`), the pool at depth k and its holes (`pool`), its qrels as known judgments (`known`), the human
sample's designs and draws (`draws`, `sample`), the glue to the statistics of `hiera_dspy.conclude`
(`conclusions`) and the filled exports (`filled`). The statistics live in conclude/; what a person sees and decides
in review/."""

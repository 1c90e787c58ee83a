"""How a probability-scored judge decides: the cut-offs, bands and blends fitted on labelled cases
and saved per judge model and prompt (``cutoffs``, with the shipped ``calibration_embedded.json``),
and the same adapted to one corpus from a few labels of its own answers (``adaptation``: the
method; ``adapted``: re-deciding a run's verdicts and keeping the adaptation per corpus)."""

"""People's labels of a run's answers: which answers to label (``active``), reading the labels back
and re-estimating every judged figure and outcome share with them (``human``), and the
prediction-powered estimators that combine labels with the judges' verdicts (``ppi``)."""

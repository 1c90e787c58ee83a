"""``rag-eval view``: a local web app over a folder of run folders: the runs with their headline
figures, a run's report and questions, two runs side by side, and labelling in the browser written
back to the run's labels file at once (the prediction-powered figures updated after each label)."""

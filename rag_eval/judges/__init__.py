"""Judges of generated answers: Ragas' faithfulness, context precision and recall, and rag-eval's
own correctness and refusal judges. A judge that fails yields ``not_judged`` with its error."""

"""The rules of Q², one module per stage, in the order the scorer calls them.

(`coref`, optional) -> `candidates` -> `questions` -> `question_filter` -> `answers` ->
`span_scores` -> `response_scores` -> `system_score` (-> `decision` with a threshold).
`normalize` (the SQuAD answer normalisation and token F1) and `unique` (de-duplication of model
inputs) serve several stages. Rules are pure functions; models come in through
`q2_metric.components`.
"""

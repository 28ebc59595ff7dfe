"""Scoring files and corpora: `files` (resumable `q2 score`), `cache` (the score cache) and `ray`
(the same over a Ray cluster)."""

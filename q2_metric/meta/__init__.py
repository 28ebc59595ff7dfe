"""Meta-evaluation: how well Q² and baselines separate consistent from inconsistent responses.

`evaluation` (the paper's tables on its annotated WoW set), `benchmark` (AUC on TRUE/BEGIN and any
annotated file), `ladder` (the paper's ablations), `datasets`, `scores`, `stats`, `calibrate`,
`baselines`, `report`/`bench_report`/`plots` (what they write) and `fetch` (`q2 data fetch`).
"""

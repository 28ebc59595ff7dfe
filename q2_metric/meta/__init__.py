"""Meta-evaluation: how well Q² and baselines separate consistent from inconsistent responses.

`evaluation` (the paper's tables on its annotated WoW set), `benchmark` (AUC on TRUE/BEGIN and any
annotated file), `ladder` (the paper's ablations), `datasets`, `scores`, `stats`, `calibrate`,
`baselines`, `report`/`bench_report`/`plots` (what they write), `fetch` (`q2 data fetch`) and
`agreement` (`q2 agree`: a fast configuration against the paper's on the same pairs).
"""

"""ParlAI extension: Q² in `parlai eval_model --metrics q2`.

Install ParlAI separately (see the README): `pip install --no-deps parlai==1.7.2` plus its runtime
needs. Teachers: `-t parlai_ext.teachers:Q2GeneratorTeacher` (and others in `teachers.py`);
replay agent: `-m parlai_ext.agents:ReplayAgent`.
"""

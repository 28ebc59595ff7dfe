"""Where things are: the repository, the test data, the published data sets (data/), the bundled sample."""

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TEST_DATA = ROOT / "tests" / "data"
DATA = ROOT / "data"  # the published data sets the tests read (data/README.md: sources and licences)
ANNOTATED = DATA / "q2_wow"  # the Q² paper's annotated WoW set
SAMPLE = ROOT / "q2_metric" / "data" / "wow_sample.csv"


def sample_rows() -> list[dict]:
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))

"""Where things are: the repository, the test data, the shared data sets, the bundled sample."""

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TEST_DATA = ROOT / "tests" / "data"
SHARED_DATA = ROOT.parent / "shared" / "data"  # the published data sets, beside the checkout
SHARED = SHARED_DATA / "q2_wow"
SAMPLE = ROOT / "q2_metric" / "data" / "wow_sample.csv"


def sample_rows() -> list[dict]:
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))

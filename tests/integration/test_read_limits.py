"""The input size limit (Q2_MAX_INPUT_BYTES): a Parquet decompression bomb is refused before decoding."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.files import HEADER, ROWS

from q2_metric.errors import Q2InputError
from q2_metric.io import read_rows

BOMB = r"""
import resource, sys
from q2_metric.io import read_rows
from q2_metric.errors import Q2InputError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read_rows(sys.argv[1])
    print("read")
except Q2InputError as err:
    print(err)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_parquet_decompression_bomb_is_refused_before_decoding(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, text = 400_000, "x" * 1000  # 400 MB of text once decoded, a few kB on disk
    table = pa.table(
        {
            "response": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), [text]),
            "knowledge": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), ["k"]),
        }
    )
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(table, bomb, compression="zstd")
    assert bomb.stat().st_size < 100_000
    env = {**os.environ, "Q2_MAX_INPUT_BYTES": str(50 * 1024**2)}
    run = subprocess.run(
        [sys.executable, "-c", BOMB, str(bomb)], env=env, capture_output=True, text=True, timeout=300
    )
    message, grown_mb = run.stdout.splitlines()
    assert (
        message.startswith(f"The input '{bomb}' is a Parquet table of at least ")
        and "above the limit of 52,428,800 bytes" in message
        and "Q2_MAX_INPUT_BYTES" in message
    )
    assert int(grown_mb) < 200, grown_mb  # the 400 MB of text were never built
    big = tmp_path / "big.csv"
    big.write_text(HEADER + ROWS * 10)
    with pytest.raises(Q2InputError, match=r"is a file of [0-9]+ bytes, above the limit of 100 bytes"):
        os.environ["Q2_MAX_INPUT_BYTES"] = "100"
        try:
            read_rows(big)
        finally:
            del os.environ["Q2_MAX_INPUT_BYTES"]

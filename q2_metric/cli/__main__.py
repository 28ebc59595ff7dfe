"""`python -m q2_metric.cli`: the `q2` command."""

import sys

from q2_metric.cli import main

sys.exit(main())

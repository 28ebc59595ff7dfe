"""`python -m q2_metric.frontends.cli`: the `q2` command."""

import sys

from q2_metric.frontends.cli import main

sys.exit(main())

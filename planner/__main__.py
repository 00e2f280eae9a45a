"""``python -m planner``: the same as the ``planner`` command (:mod:`planner.console`)."""

import sys

from planner.console import main

sys.exit(main())

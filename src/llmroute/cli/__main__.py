"""``python -m llmroute.cli``: the ``llmroute`` command (as ``python -m llmroute``)."""

import sys

from . import main

sys.exit(main())

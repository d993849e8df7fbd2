"""``python -m llmroute``: the ``llmroute`` command."""

import sys

from .cli import main

sys.exit(main())

"""``python -m simscan.gui [ROOT...] [--index PATH]``: the window."""

import sys

from simscan.gui.app import main

sys.exit(main())

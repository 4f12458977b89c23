import sys

from simscan.cli import main

sys.exit(main())

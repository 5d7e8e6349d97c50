"""`python -m bugforge.cli`: the same as the `bugforge` command."""

import sys

from bugforge.cli import main

sys.exit(main())

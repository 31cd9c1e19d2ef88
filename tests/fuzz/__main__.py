"""`python -m fuzz`: the long mode (see cli.py)."""
import sys

from .cli import main

sys.exit(main())

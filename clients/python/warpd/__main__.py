"""__main__.py — `python3 -m warpd`: the warpctl command line (cli.py)."""
import sys

from .cli import main

sys.exit(main())

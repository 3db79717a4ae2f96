"""`python -m tilelang_conformance ...`: the same as `tilelang conformance ...`."""
import sys

from .cli import main

sys.exit(main())

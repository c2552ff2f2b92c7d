"""Put this folder on ``sys.path`` so the tests can import the claim scripts and ``_common``."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

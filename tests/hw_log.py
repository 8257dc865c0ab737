"""The hardware tests' log: ``TCSIM_HW_LOG`` names a JSON-lines file that receives each record
(scripts/summarize_hw.py reads it for the docs)."""

import json
import os


def log_hw(record: dict) -> None:
    path = os.environ.get("TCSIM_HW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")

"""The evidence table of docs/bank-conflicts.md, from a `gpu_check.sh smem` log (JSON lines).

    python scripts/smem_table.py docs/evidence/hw_smem_session3_2026-11-22.jsonl.gz

Each logged pattern is counted again by this tcsim (from its logged addresses and sources)
and compared with the Nsight Compute counts in the log: wavefronts and conflicts both.
"""

import gzip
import json
import sys

from tcsim.memory import access

FAMILIES = (("ld.shared", "ld.shared 8 / 16 / 32 / 64 / 128-bit"),
            ("st.shared", "st.shared 8 / 16 / 32 / 64 / 128-bit"),
            ("ldmatrix", "ldmatrix x1, x2, x4 (.trans)"),
            ("stmatrix", "stmatrix x1, x2, x4 (.trans)"),
            ("cp.async.ca", "cp.async.ca 4 / 8 / 16 bytes"),
            ("cp.async.cg", "cp.async.cg 16 bytes"))


def tables(path: str) -> str:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        records = [json.loads(line) for line in f]
    records = [r for r in records if r["test"] == "smem"]
    rows = ["| instruction family | patterns | without a caveat: equal | with a caveat: equal |",
            "|---|---|---|---|"]
    for prefix, name in FAMILIES:
        plain = caveated = plain_equal = caveated_equal = 0
        for r in (r for r in records if r["instruction"].startswith(prefix)):
            a = access(r["instruction"], r["shared"], sources=r["sources"])
            equal = (a.wavefronts, a.conflicts) == (r["hw_wavefronts"], r["hw_conflicts"])
            if a.caveat:
                caveated, caveated_equal = caveated + 1, caveated_equal + equal
            else:
                plain, plain_equal = plain + 1, plain_equal + equal
        rows.append(f"| {name} | {plain + caveated} | {plain_equal} of {plain} | "
                    f"{caveated_equal} of {caveated} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(tables(sys.argv[1]), end="")

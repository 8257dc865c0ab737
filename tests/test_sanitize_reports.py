"""Reading compute-sanitizer's reports (no GPU): the error count and the first error line of
each tool, from report lines logged on the H100
(docs/evidence/hw_checks_hopper_2026-11-24.jsonl)."""

from tcsim.hw.sanitize import _errors, _first_error

SYNCCHECK = """========= COMPUTE-SANITIZER
========= Barrier error detected. Missing wait.
=========     at kernel7+0x6560
=========     by thread (0,0,0) in block (0,0,0)
========= ERROR SUMMARY: 2 errors"""
MEMCHECK = """========= COMPUTE-SANITIZER
========= Out-of-range shared or local address
=========     at kernel7+0x10a0
========= Target application returned an error
========= ERROR SUMMARY: 66 errors"""
RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at kernel6+0x1cf0
========= RACECHECK SUMMARY: 12 hazards displayed (24 errors, 0 warnings)"""
CLEAN = """========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"""


def test_each_tools_first_error_and_count():
    assert (_errors(SYNCCHECK), _first_error(SYNCCHECK)) == (
        2, "Barrier error detected. Missing wait.")
    assert (_errors(MEMCHECK), _first_error(MEMCHECK)) == (
        66, "Out-of-range shared or local address")
    assert (_errors(RACECHECK), _first_error(RACECHECK)) == (
        24, "Error: Race reported between Write access at kernel6+0x1cf0")
    assert (_errors(CLEAN), _first_error(CLEAN)) == (0, "")

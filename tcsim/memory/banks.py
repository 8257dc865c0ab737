"""Shared memory's banks: 32 of them, 4 bytes wide; the word at byte ``a`` is in bank
``(a // 4) % 32``. The one place that formula is written; `access` and `async_copy` count
with it."""

from __future__ import annotations

BANKS = 32
BANK_BYTES = 4


def words(address: int, width: int) -> range:
    """The 4-byte words an access of ``width`` bytes at ``address`` touches."""
    first = address // BANK_BYTES
    return range(first, first + max(1, width // BANK_BYTES))


def banks(address: int, width: int) -> set[int]:
    """The banks an access of ``width`` bytes at ``address`` touches."""
    return {w % BANKS for w in words(address, width)}

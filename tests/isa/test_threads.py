"""How many threads the engine uses (tcsim.isa.engine.thread_count)."""

import os

from tcsim.isa import engine


def test_the_default_is_the_cores_up_to_eight(monkeypatch):
    monkeypatch.delenv("TCSIM_THREADS", raising=False)
    for cores, expected in ((1, 1), (2, 2), (8, 8), (16, 8), (128, 8)):
        monkeypatch.setattr(os, "cpu_count", lambda cores=cores: cores)
        assert engine.thread_count() == expected


def test_tcsim_threads_overrides_the_default(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setenv("TCSIM_THREADS", "12")
    assert engine.thread_count() == 12

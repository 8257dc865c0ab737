"""tcsim.progress: a bar on a terminal, nothing otherwise; and the long calls that use it."""

import io
import re
import threading

import numpy as np
import pytest

import tcsim
from tcsim import progress as progress_module
from tcsim.progress import progress, wanted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def at_once(monkeypatch):
    """Draw from the first tick, every tick."""
    monkeypatch.setattr(progress_module, "DELAY_SECONDS", 0.0)
    monkeypatch.setattr(progress_module, "REDRAW_SECONDS", 0.0)
    monkeypatch.delenv("TCSIM_PROGRESS", raising=False)


def shares(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\] +(\d+)%", text)]


def test_a_terminal_gets_a_bar_that_is_erased_at_the_end(at_once):
    out = Terminal()
    with progress(40, "work", stream=out) as tick:
        for _ in range(4):
            tick(10)
    text = out.getvalue()
    assert shares(text) == [25, 50, 75, 100]
    assert "work [#######" in text
    assert text.endswith("\r") and text.rsplit("\r", 2)[-2].strip() == ""  # erased


def test_a_pipe_or_a_file_gets_nothing(at_once):
    out = io.StringIO()
    with progress(10, "work", stream=out) as tick:
        tick(10)
    assert out.getvalue() == ""


def test_quick_work_draws_nothing_even_on_a_terminal(monkeypatch):
    monkeypatch.delenv("TCSIM_PROGRESS", raising=False)
    out = Terminal()
    with progress(10, "work", stream=out) as tick:  # the default delay: a second
        tick(10)
    assert out.getvalue() == ""


@pytest.mark.parametrize("setting, terminal, want", [("0", True, False), ("1", False, True),
                                                     ("", True, True), ("", False, False)])
def test_tcsim_progress_overrides_the_terminal_test(monkeypatch, setting, terminal, want):
    monkeypatch.setenv("TCSIM_PROGRESS", setting)
    assert wanted(Terminal() if terminal else io.StringIO()) is want


def test_ticks_past_the_total_stop_at_100_percent_and_threads_may_tick(at_once):
    out = Terminal()
    with progress(1000, "work", stream=out) as tick:
        threads = [threading.Thread(target=lambda: [tick(1) for _ in range(300)])
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    got = shares(out.getvalue())
    assert got == sorted(got) and got[-1] == 100 and max(got) == 100


def test_a_bad_total_is_refused():
    with pytest.raises(ValueError, match="progress total must be a non-negative integer"):
        with progress(-1, "work"):
            pass
    with pytest.raises(TypeError, match="progress total must be an integer"):
        with progress(2.5, "work"):
            pass


def test_run_shows_its_progress_on_a_terminal_and_nothing_in_a_pipe(at_once, monkeypatch,
                                                                     capsys):
    rng = np.random.default_rng(1)
    A = (rng.integers(-2, 3, (256, 128))).astype(np.float16)
    B = (rng.integers(-2, 3, (128, 256))).astype(np.float16)
    D = tcsim.run(tcsim.kernel8, A, B)  # stderr is captured: not a terminal
    assert capsys.readouterr().err == ""
    assert np.array_equal(D, A.astype(np.float64) @ B.astype(np.float64))  # exact: small ints
    monkeypatch.setenv("TCSIM_PROGRESS", "1")
    tcsim.run(tcsim.kernel8, A, B)
    got = shares(capsys.readouterr().err)
    # kernel8's producer and consumers each walk the 2 K tiles: the bar still counts them once.
    assert got == sorted(got) and got[0] < 100 and got[-1] == 100


def test_precision_study_shows_its_progress(at_once, monkeypatch, capsys):
    monkeypatch.setenv("TCSIM_PROGRESS", "1")
    tcsim.precision_study(ks=[16, 64], dots=2)
    assert shares(capsys.readouterr().err) == [25, 100]


def test_an_exhaustive_trace_shows_its_progress_block_by_block(at_once, monkeypatch, capsys):
    monkeypatch.setenv("TCSIM_PROGRESS", "1")
    tcsim.trace(tcsim.kernel1, 512, 256, 64, exhaustive=True)  # 2 x 2 blocks of 256 x 128
    assert shares(capsys.readouterr().err) == [25, 50, 75, 100]

"""An exception raised in the user's own code (a kernel's schedule, the file that defines it)
shows the user's frames (file, line, the line itself) before the one-line error; tcsim's own
refusals stay one line, and --debug or TCSIM_DEBUG=1 shows the full traceback."""

import textwrap
from pathlib import Path

import pytest
from cli_run import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "own_kernel.py"

SCHEDULE = """\
    from tcsim import GemmParams, Kernel

    def program(m, p):
        registers = m.zeros(p.warps, 32, 2)
        {bug}

    buggy = Kernel("buggy", "a schedule with a bug", program, lambda p: (),
                   GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64,
                              warp_k=32), takes_c=False)
"""


def user_file(tmp_path, bug: str) -> str:
    path = tmp_path / "mykernel.py"
    path.write_text(textwrap.dedent(SCHEDULE.format(bug=bug)))
    return f"{path}:buggy"


@pytest.mark.parametrize("bug, kind", [("registers[..., 40, :]", "IndexError"),
                                       ("raise RuntimeError('my own check')", "RuntimeError"),
                                       ("{}['missing']", "KeyError")])
def test_an_error_in_a_schedule_shows_the_users_line(tmp_path, bug, kind):
    code, out, err = run_cli(["trace", user_file(tmp_path, bug), "128", "128", "64"])
    assert code == 2 and out == ""
    assert "Traceback (your code's frames" in err
    assert 'mykernel.py", line 5, in program' in err and bug in err
    assert "tcsim/" not in err  # tcsim's own frames only with --debug
    assert err.strip().splitlines()[-1].startswith(f"tcsim: error: {kind} in your code")


def test_a_file_that_fails_to_load_shows_the_failing_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import numpy\n\nraise RuntimeError('boom')\n")
    code, _, err = run_cli(["trace", f"{path}:x", "128", "128", "64"])
    assert code == 2
    assert 'broken.py", line 3, in <module>' in err and "raise RuntimeError('boom')" in err
    assert err.strip().splitlines()[-1] == (f"tcsim: error: kernel '{path}:x': running {path} "
                                            f"raised RuntimeError: boom")


@pytest.mark.parametrize("argv", [
    ["trace", "kernel1", "100", "128", "64"],  # tcsim's own refusal
    ["trace", f"{EXAMPLE}:mine", "128", "128", "64", "--accumulate", "f32"],  # requires'
])
def test_refusals_stay_one_line(argv):
    code, _, err = run_cli(argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("switch", ["flag before", "flag after", "environment"])
def test_debug_shows_the_full_traceback(tmp_path, monkeypatch, switch):
    argv = ["trace", user_file(tmp_path, "registers[..., 40, :]"), "128", "128", "64"]
    if switch == "environment":
        monkeypatch.setenv("TCSIM_DEBUG", "1")
    else:
        argv = ["--debug", *argv] if switch == "flag before" else [*argv, "--debug"]
    code, _, err = run_cli(argv)
    assert code == 2 and err.startswith("Traceback (most recent call last)")
    assert "cli.py" in err and "trace.py" in err and 'mykernel.py", line 5' in err
    code, _, err = run_cli(["trace", "kernel1", "100", "128", "64"]
                           + (["--debug"] if switch != "environment" else []))
    assert code == 2 and "ProblemSizeError" in err and "Traceback" in err

"""Properties of the `tcsim` command: every bad argument is one line on stderr and exit status
2, never a traceback; `tcsim --version` names the version."""

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prop_inputs import SOME

import tcsim
from tcsim.cli import main

Q = "m16n8k8.row.col.f32.f16.f16.f32"
words = st.text(alphabet="abcdefkmnorstwx0123456789.-_", min_size=0, max_size=10)
numbers = st.one_of(st.integers(-10**12, 10**12).map(str), st.sampled_from(
    ["0", "-1", "2147483648", "1e3", "64.0", "nan", "", "0x40", "99999999999999999999999"]),
    words)


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse: --help, --version, usage errors
            code = stop.code
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(argv):
    code, out, err = run_main(argv)
    assert code == 2, (argv, code, out, err)
    assert err.endswith("\n") and err.count("\n") == 1, (argv, err)
    assert "error:" in err and "Traceback" not in err, (argv, err)


bad_argvs = st.one_of(
    # Unknown commands and arguments (never `docs`, which writes files, nor `demo`).
    st.lists(words, max_size=3).filter(lambda argv: argv[:1] not in (["docs"], ["demo"])),
    st.tuples(st.just("trace"), st.sampled_from(["kernel1", "kernel5", "kernel99", ""]),
              numbers, numbers, numbers).map(list),
    st.tuples(st.just("trace"), st.just("kernel1"), st.just("256"), st.just("128"),
              st.just("64"), st.sampled_from(["--block_m", "--warp_k", "--stages", "--mma_k",
                                              "--accumulate", "--nope"]), numbers).map(list),
    st.tuples(st.just("compare"), st.sampled_from(["kernel1", "x"]), st.just("kernel2"),
              numbers, numbers, numbers).map(list),
    st.tuples(st.just("mma"), words).map(list),
    st.tuples(st.just("mma"), st.just(Q), st.sampled_from(["--element", "--seed", "--arch",
                                                           "--distribution", "--inputs"]),
              numbers, numbers).map(list),
    st.tuples(st.just("layout"), st.sampled_from([Q, "x", ""]), words).map(list),
    st.tuples(st.just("verify"), st.just("--count"), numbers).map(list),
)


@SOME
@given(bad_argvs)
def test_every_bad_argument_is_one_line_and_status_2(argv):
    if argv and argv[0] in ("-h", "--help", "--version") or any(
            a in ("-h", "--help") for a in argv):
        return
    code, out, err = run_main(argv)
    if code == 0 and not err:
        return  # a valid command line after all (say, trace kernel1 256 128 64)
    if argv[:1] == ["verify"] and code == 2 and "no GPU" in out:
        return  # a valid count, and no GPU here
    assert code == 2, (argv, code, out, err)
    assert err.endswith("\n") and err.count("\n") == 1, (argv, err)
    assert "error:" in err and "Traceback" not in err, (argv, err)


@pytest.mark.parametrize("argv", [
    [], ["trace"], ["trace", "kernel1", "abc", "1", "1"], ["trace", "kernel1", "0", "128", "64"],
    ["trace", "kernel1", "256", "128", str(2**40)], ["trace", "kernel1", "256", "128", "64",
                                                      "--block_m", "0"],
    ["mma", Q, "--element", "16", "0"], ["mma", Q, "--element", "-1", "0"],
    ["mma", Q, "--seed", "-3"], ["mma", Q, "--arch", "sm_99"], ["layout", Q, "e"],
    ["verify", "--count", "0"], ["docs", "/dev/null/x"], ["nope"],
])
def test_known_bad_command_lines(argv):
    assert_one_line_error(argv)


@pytest.mark.parametrize("content", ["text", "empty", "npy", "zip", "missing", "batched",
                                     "dtype", "shape", "objects", "directory"])
def test_bad_input_files_are_one_line(tmp_path, content):
    path = tmp_path / "in.npz"
    A = np.ones((16, 8), np.float16)
    B = np.ones((8, 8), np.float16)
    C = np.ones((16, 8), np.float32)
    if content == "text":
        path.write_text("not an archive")
    elif content == "empty":
        path.write_bytes(b"")
    elif content == "npy":
        with open(path, "wb") as f:
            np.save(f, A)
    elif content == "zip":
        import zipfile

        with zipfile.ZipFile(path, "w") as z:
            z.writestr("A.npy", b"garbage")
    elif content == "missing":
        np.savez(path, A=A, B=B)
    elif content == "batched":
        np.savez(path, A=np.stack([A, A]), B=B, C=C)
    elif content == "dtype":
        np.savez(path, A=A.astype(np.float32), B=B, C=C)
    elif content == "shape":
        np.savez(path, A=A.T, B=B, C=C)
    elif content == "objects":
        np.savez(path, A=np.array([object()]), B=B, C=C)
    else:
        path = tmp_path
    assert_one_line_error(["mma", Q, "--inputs", str(path)])


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"tcsim {tcsim.__version__}\n"


def test_a_real_process_prints_one_line_and_no_traceback():
    root = Path(tcsim.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for argv in (["trace", "kernel1", "abc", "1", "1"], ["mma", "m16n8k9.row.col"],
                 ["--version"]):
        run = subprocess.run([sys.executable, "-m", "tcsim", *argv], capture_output=True,
                             text=True, env=env, timeout=60)
        if argv == ["--version"]:
            assert run.returncode == 0 and run.stdout == f"tcsim {tcsim.__version__}\n"
            continue
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr

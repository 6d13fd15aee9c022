"""oa in a process forked after the parent used it (os.fork, multiprocessing's
'fork' start method): the child gets a clear oa.FailedPreconditionError on first
use instead of hanging, and exits without hanging. Each case runs in a fresh
interpreter under a timeout, so that a hang fails the test rather than the suite."""
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

TIMEOUT_S = 120


def run_script(body):
    script = textwrap.dedent(body)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(__import__("oa").__file__)),
                                                    env.get("PYTHONPATH")] if p)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:  # a file: 'spawn' re-imports it
        f.write(script)
    try:
        done = subprocess.run([sys.executable, f.name], capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the script hung for {TIMEOUT_S} s")
    finally:
        os.unlink(f.name)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_forked_child_raises_and_exits():
    out = run_script("""
        import atexit, os, oa
        kept = oa.randn(3) * 2                    # the parent's engine, and a tensor the child inherits
        kept.numpy()
        pid = os.fork()
        if pid == 0:
            errors = []
            for use in (lambda: oa.randn(3), lambda: kept.numpy(), lambda: kept + 1, lambda: oa.tensor([1.0]),
                        lambda: oa.synchronize(), lambda: oa.Engine()):
                try:
                    use()
                    errors.append("no error")
                except oa.FailedPreconditionError as e:
                    errors.append("ok" if isinstance(e, RuntimeError) and "forked" in str(e) and "spawn" in str(e)
                                  and "forkserver" in str(e) else str(e))
            print("child:", errors, flush=True)
            del kept
            # Python's exit handlers must not wait on the GPU; the child then
            # leaves by os._exit, as multiprocessing's forked children do (the
            # C library's exit would also run the driver's handlers, and
            # Mesa's joins worker threads that the child does not have).
            atexit._run_exitfuncs()
            os._exit(0 if errors == ["ok"] * 6 else 3)
        _, status = os.waitpid(pid, 0)
        print("status", os.waitstatus_to_exitcode(status))
        print("parent", float((kept + 1).sum()))
    """)
    assert "status 0" in out, out
    assert "parent" in out


def test_multiprocessing_start_methods():
    out = run_script("""
        import multiprocessing as mp, oa

        def work(i):
            return float(oa.tensor([i, 1.0]).sum())

        if __name__ == "__main__":
            oa.ones(2).numpy()
            with mp.get_context("fork").Pool(1) as pool:
                try:
                    pool.map(work, [1])
                    print("fork: no error")
                except RuntimeError as e:
                    print("fork:", type(e).__name__, "spawn" in str(e))
            with mp.get_context("spawn").Pool(1) as pool:
                print("spawn:", pool.map(work, [1, 2]))
    """)
    assert "fork: FailedPreconditionError True" in out, out
    assert "spawn: [2.0, 3.0]" in out, out


def test_fork_before_any_engine_is_fine():
    out = run_script("""
        import os, oa
        pid = os.fork()
        if pid == 0:
            print("child", float(oa.tensor([1.0, 2.0]).sum()), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert "child 3.0" in out, out

"""An interrupted sweep stops its worker processes instead of leaving them running."""

import os
import signal
import time

import pytest

from agentbench_af.sweep.local import PoolBackend, stop_on_sigterm


def test_interrupted_pool_terminates_busy_workers():
    pool = PoolBackend(workers=1, threads=1)
    future = pool._executor().submit(time.sleep, 120)
    deadline = time.time() + 60
    while not future.running() and time.time() < deadline:
        time.sleep(0.05)
    assert future.running()
    processes = list(pool._pool._processes.values())
    started = time.time()
    pool.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert time.time() - started < 30  # not the 120 s the task would take
    for process in processes:
        process.join(timeout=10)
        assert not process.is_alive()


def test_sigterm_becomes_system_exit_inside_the_block_only():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped, stop_on_sigterm():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs before this returns
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before

"""Graceful stops (`cvl_eval.training.session.StopFlag`) with real signals to this process."""

from __future__ import annotations

import os
import signal
import time

import pytest

from cvl_eval.training.session import StopFlag


def _signal_self(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.05)  # the handler runs at the next bytecode boundary of the main thread


def test_repeated_sigterm_keeps_the_graceful_stop():
    """A sweep worker can get SIGTERM twice (parent-death signal, supervisors): still graceful."""
    with StopFlag() as flag:
        for _ in range(3):
            _signal_self(signal.SIGTERM)
        assert flag.requested


def test_a_second_sigint_interrupts_at_once():
    with StopFlag() as flag:
        _signal_self(signal.SIGINT)
        assert flag.requested
        with pytest.raises(KeyboardInterrupt):
            _signal_self(signal.SIGINT)


def test_handlers_are_restored():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with StopFlag():
        pass
    assert {sig: signal.getsignal(sig) for sig in before} == before

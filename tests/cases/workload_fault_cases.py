"""Workloads whose FUNC does what a user's set-up may do to the process it runs in (tests/test_workload_check.py)."""

import os
import signal
import threading
import time

import numpy as np


def hard_exit(xp, shape=(4,)):
    os._exit(3)  # flametool exited 3, silently


def sleeps_for_ever(xp, shape=(4,)):
    time.sleep(1e9)


def leaves_a_thread(xp, shape=(4,)):
    threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: flametool never exited
    return 1  # not a workload: flametool stops here, after the check


def forks(xp, shape=(4,)):
    if os.fork() == 0:  # ran on after flametool ended
        time.sleep(600)
        os._exit(0)
    return 1


def ignores_ctrl_c(xp, shape=(4,)):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # flametool ignored Ctrl-C from then on

    def fn(a):
        time.sleep(0.002)  # on the clock: a test stops it while it times
        return a + 1.0

    return fn, [np.ones(shape)]


def replaces_stdout(xp, shape=(4,)):
    import io
    import sys

    sys.stdout = io.StringIO()  # the check's answer went there, and read as 'exited with code 0 before FUNC returned'
    return 1

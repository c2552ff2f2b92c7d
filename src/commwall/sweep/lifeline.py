"""Sweep pool processes die with the driver that started them.

A sweep's local pool is a forkserver (a child of the driver) and its workers (children of the
forkserver). Killed by SIGKILL, SIGTERM (Slurm, ``timeout``) or the OOM killer, the driver runs no
clean-up, and the children used to live on under PID 1 holding ~500 MB. Linux's
``prctl(PR_SET_PDEATHSIG)`` asks the kernel to signal a process when its parent exits: the
forkserver arms it when it starts (:mod:`commwall.sweep._forkserver_lifeline`, a preload module)
and every worker arms it in its initializer (:func:`die_with_parent`), so the chain unwinds from
the driver down. Elsewhere (macOS, Windows) this is a no-op: the spawn start method's workers exit
when their queues close.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

__all__ = ["die_with_parent"]

#: ``PR_SET_PDEATHSIG`` from ``<linux/prctl.h>``.
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux); exit at once
    if the parent is already gone. Returns whether the request was made."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = bool(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
    if armed and os.getppid() != parent:  # the parent died before the request was made
        os._exit(1)
    return armed

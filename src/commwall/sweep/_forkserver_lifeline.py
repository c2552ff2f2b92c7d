"""Imported by the sweep pool's forkserver only (``set_forkserver_preload``): the forkserver
receives SIGTERM when the driver that started it exits, however it exits
(:mod:`commwall.sweep.lifeline`). Never import it in the driver: it would tie the driver's life
to its own parent."""

from __future__ import annotations

import signal

from commwall.sweep.lifeline import die_with_parent

die_with_parent(signal.SIGTERM)

"""NCCL environment settings the collective model honours, and where they come from.

A run's ``NCCL_*`` variables change what NCCL builds and picks. The model reads these (NCCL's
``docs/env.rst``):

* ``NCCL_ALGO`` / ``NCCL_PROTO`` force the algorithm and protocol (the first one named);
* ``NCCL_NVLS_ENABLE=0`` turns NVLink SHARP off;
* ``NCCL_MIN_NCHANNELS`` / ``NCCL_MIN_CTAS`` raise and ``NCCL_MAX_NCHANNELS`` /
  ``NCCL_MAX_CTAS`` lower the communicator's channels — and with them its p2p channels, which
  NCCL takes from the channels (``p2pnChannels = pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS))``,
  ``paths.cc``);
* ``NCCL_NCHANNELS_PER_NET_PEER`` (at least 1; NCCL ignores lower values, ``init.cc``) sets the
  p2p channels of a network peer, which NCCL then no longer halves for many peers.

Every other variable is reported as not read, never silently dropped. Settings come from the
user (``--env KEY=VALUE``) or from a log NCCL wrote with ``NCCL_DEBUG=INFO``, where it prints
``NCCL_X set by environment to V`` for each one it reads (:mod:`commwall.io.nccl_tests`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from commwall.collectives.constants import Proto
from commwall.collectives.fabric import CommFabric
from commwall.collectives.nccl import pow2_up
from commwall.collectives.tuner import parse_algo, parse_proto

__all__ = [
    "MODEL_READS",
    "apply_nccl_env",
    "bounded_channels",
    "describe_env",
    "env_lines",
    "limit_channels",
    "parse_env_assignments",
]

_MIN_CHANNEL_ENV: Final = ("NCCL_MIN_NCHANNELS", "NCCL_MIN_CTAS")
_MAX_CHANNEL_ENV: Final = ("NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS")
#: The variables the model reads; any other is reported as not read.
MODEL_READS: Final = frozenset(
    ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_NCHANNELS_PER_NET_PEER",
     *_MIN_CHANNEL_ENV, *_MAX_CHANNEL_ENV)
)  # fmt: skip
#: NCCL's most channels (``MAXCHANNELS``, ``device.h``).
_MAX_CHANNELS: Final = 64
_NAME = re.compile(r"^NCCL_[A-Z0-9_]+$")


def _env_int(env: dict[str, str], key: str) -> int | None:
    m = re.match(r"\s*(\d+)", env.get(key, ""))
    return int(m.group(1)) if m else None


def bounded_channels(channels: int, low: int | None, high: int | None) -> int:
    """``channels`` raised to ``low`` and lowered to ``high`` (``None``: no bound), at least 1
    and at most NCCL's 64 (:func:`limit_channels`)."""
    raised = max(channels, low) if low is not None else channels
    return max(1, min(raised, high if high is not None else _MAX_CHANNELS, _MAX_CHANNELS))


def limit_channels(fabric: CommFabric, low: int | None, high: int | None) -> CommFabric:
    """``fabric`` with its channels raised to ``low`` and lowered to ``high`` (``None``: no
    bound), as NCCL applies a communicator's ``minCTAs`` / ``maxCTAs`` — from
    ``NCCL_MIN_CTAS`` / ``NCCL_MAX_CTAS`` or the ``ncclConfig_t`` a framework passes
    (``connect.cc``: ``nChannels = min(..., config.maxCTAs)``) — and its p2p channels with them
    (``p2pnChannels = pow2Up(nChannels)``, ``paths.cc``); never more than NCCL's 64.
    """
    channels = bounded_channels(fabric.channels, low, high)
    if channels == fabric.channels:
        return fabric
    return replace(fabric, channels=channels, p2p_channels=min(pow2_up(channels), _MAX_CHANNELS))


def apply_nccl_env(
    fabric: CommFabric, env: dict[str, str], algo: str, proto: str
) -> tuple[CommFabric, str | None, Proto | None]:
    """The communicator, algorithm and protocol a run with NCCL settings ``env`` gets (module
    doc); ``algo`` / ``proto`` (``default`` or empty: none) win over ``NCCL_ALGO`` /
    ``NCCL_PROTO``. Names the model does not implement force nothing."""
    algo_name = None if algo in ("default", "") else algo
    proto_name = None if proto in ("default", "") else proto
    for key, value in env.items():
        word = value.split()[0].strip(",;") if value.split() else ""
        if key == "NCCL_ALGO" and word and algo_name is None:
            algo_name = word
        elif key == "NCCL_PROTO" and word and proto_name is None:
            proto_name = word
    lows = [v for k in _MIN_CHANNEL_ENV if (v := _env_int(env, k))]
    highs = [v for k in _MAX_CHANNEL_ENV if (v := _env_int(env, k))]
    fabric = limit_channels(fabric, max(lows, default=None), min(highs, default=None))
    if env.get("NCCL_NVLS_ENABLE", "").strip().startswith("0"):
        fabric = replace(fabric, nvls=False)
    per_net_peer = _env_int(env, "NCCL_NCHANNELS_PER_NET_PEER")
    if per_net_peer is not None and per_net_peer >= 1:
        fabric = replace(fabric, net_peer_channels=min(per_net_peer, _MAX_CHANNELS))
    try:
        algo_out = parse_algo(algo_name.split(",")[0]) if algo_name else None
    except ValueError:
        algo_out = None
    try:
        proto_out = parse_proto(proto_name.split(",")[0]) if proto_name else None
    except ValueError:
        proto_out = None
    return fabric, algo_out, proto_out


def parse_env_assignments(items: list[str], option: str = "--env") -> dict[str, str]:
    """``KEY=VALUE`` settings as a dict; raises ``ValueError`` naming ``option``, the item and
    what is allowed (an ``NCCL_`` name in capitals, ``=``, a value) for any other shape.

    >>> parse_env_assignments(["NCCL_ALGO=Ring", "NCCL_MIN_NCHANNELS=32"])
    {'NCCL_ALGO': 'Ring', 'NCCL_MIN_NCHANNELS': '32'}
    """
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _NAME.match(key) or not value.strip():
            raise ValueError(
                f"{option}: {item!r} is not a setting; allowed: NCCL_NAME=VALUE, e.g. "
                "NCCL_MIN_NCHANNELS=32 (the name in capitals, a non-empty value)"
            )
        env[key] = value.strip()
    return env


def describe_env(env: dict[str, str]) -> dict[str, list[str]]:
    """What the model makes of ``env``: ``applied`` (``NAME=VALUE`` it honours), ``not_read``
    (names it has no model of) and ``not_understood`` (names it reads whose value it cannot:
    an algorithm or protocol it does not implement, an exclusion list such as ``^NVLS``, a
    channel count that is not a number).

    >>> describe_env({"NCCL_ALGO": "^NVLS", "NCCL_MIN_CTAS": "8", "NCCL_IB_HCA": "mlx5_0"})
    {'applied': ['NCCL_MIN_CTAS=8'], 'not_read': ['NCCL_IB_HCA'], 'not_understood': ['NCCL_ALGO=^NVLS']}
    """
    out: dict[str, list[str]] = {"applied": [], "not_read": [], "not_understood": []}
    for key, value in env.items():
        if key not in MODEL_READS:
            out["not_read"].append(key)
            continue
        word = value.split()[0].strip(",;").split(",")[0] if value.split() else ""
        try:
            if key == "NCCL_ALGO":
                parse_algo(word)
            elif key == "NCCL_PROTO":
                parse_proto(word)
            elif key != "NCCL_NVLS_ENABLE" and not (_env_int(env, key) or 0) >= 1:
                raise ValueError(value)  # not a whole number of channels, or below 1
        except ValueError:
            out["not_understood"].append(f"{key}={value}")
        else:
            out["applied"].append(f"{key}={value}")
    return out


def env_lines(env: dict[str, str]) -> list[str]:
    """:func:`describe_env` in words, one line per kind that is not empty (what ``collective``
    notes and ``nccl-tests`` prints)."""
    seen = describe_env(env)
    words = {
        "applied": ("applied to the model", ""),
        "not_read": ("the model does not read", " (no effect)"),
        "not_understood": (
            "whose value the model cannot use",
            " (no effect: it takes one algorithm or protocol name and whole channel counts)",
        ),
    }
    return [
        f"NCCL settings {what}: {', '.join(seen[key])}{why}"
        for key, (what, why) in words.items()
        if seen[key]
    ]

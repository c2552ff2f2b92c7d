"""Golden outputs of the packet engine, in htsim's style: small fixed runs whose exact results
(event count, every counter, every completion time, the makespan, digests of the queue time
series and the per-port table) are pinned bit for bit.

They are the safety net of performance work on the event loop, the ports, the endpoints and
the congestion controls: an optimisation must leave every number here unchanged. Re-pin them
(run this module as a script: ``python -m commwall.engines.packet.test_golden``) only when a
change to the *model* is intended, and say so in the commit message.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from commwall.engines.packet import run_packet_traffic
from commwall.engines.packet.config import PacketConfig
from commwall.engines.packet.result import PacketResult
from commwall.engines.packet.traffic import with_cable_latency
from commwall.topology import fat_tree, leaf_spine
from commwall.transport import FABRICS

#: Every counter a traffic run reports; the golden data lists only the non-zero ones.
COUNTERS = (
    "sent", "delivered", "duplicate", "discarded", "dropped", "corrupted", "trimmed",
    "retransmitted", "timeouts", "cnps_sent", "cnps_received", "repaths", "drop_packets",
    "trim_packets", "corrupt_packets", "pause_frames_sent", "resume_frames_sent", "ecn_marks",
    "pause_frames", "paused_s", "ports_paused", "events", "peak_buffer_bytes", "link_replays",
)  # fmt: skip

KIB = 1024
ROUTINGS = ("ecmp", "spray", "adaptive")


def _fat_tree() -> Any:
    return with_cable_latency(fat_tree(4, link_rate=12.5e9), 1e-6)


def _leaf_spine() -> Any:
    return with_cable_latency(leaf_spine(4, 8, link_rate=12.5e9), 1e-6)


def _derangement(n: int, seed: int) -> tuple[list[int], list[int]]:
    """A single-cycle permutation: every host sends to one other, every host receives once."""
    order = np.random.default_rng(seed).permutation(n)
    dst = np.empty(n, dtype=np.int64)
    dst[order] = np.roll(order, -1)
    return list(range(n)), [int(x) for x in dst]


def _cases() -> dict[str, dict[str, Any]]:
    """Name → keyword arguments of :func:`run_packet_traffic` (``topology`` a builder)."""
    cases: dict[str, dict[str, Any]] = {}
    small = PacketConfig(buffer=512 * KIB)  # drops (lossy), trims (UEC), pauses (RoCE)
    for fabric in FABRICS:
        for routing in ROUTINGS:
            cases[f"incast8-small-buffer-{fabric}-{routing}"] = dict(
                topology=_fat_tree, src=list(range(1, 9)), dst=[0] * 8, nbytes=256 * KIB,
                fabric=fabric, routing=routing, config=small, seed=1,
            )  # fmt: skip
        cases[f"incast15-{fabric}"] = dict(
            topology=_fat_tree, src=list(range(1, 16)), dst=[0] * 15, nbytes=512 * KIB,
            fabric=fabric, routing=None, config=None, seed=1,
        )  # fmt: skip
        src, dst = _derangement(16, 7)
        cases[f"permutation-{fabric}"] = dict(
            topology=_fat_tree, src=src, dst=dst, nbytes=512 * KIB,
            fabric=fabric, routing=None, config=None, seed=2,
        )  # fmt: skip
    src, dst = _derangement(16, 7)
    for fabric, routing in (("ib", "adaptive"), ("roce", "spray"), ("lossy", "spray")):
        cases[f"permutation-{fabric}-{routing}"] = dict(
            topology=_fat_tree, src=src, dst=dst, nbytes=512 * KIB,
            fabric=fabric, routing=routing, config=None, seed=2,
        )  # fmt: skip
    src, dst = _derangement(16, 11)
    for fabric in ("ib", "roce", "uec", "lossy"):  # bit errors: FCS drops, recovered end to end
        cases[f"ber-{fabric}"] = dict(
            topology=_fat_tree, src=src, dst=dst, nbytes=256 * KIB,
            fabric=fabric, routing=None, config=PacketConfig(ber=1e-6), seed=3,
        )  # fmt: skip
    odd = PacketConfig(cut_through=False, ack_every=4, max_inflight=64 * KIB, mtu=2048)
    for fabric in ("ib", "roce", "uec"):
        cases[f"leaf-spine-{fabric}"] = dict(
            topology=_leaf_spine, src=[1, 2, 3, 4, 5], dst=[0, 0, 0, 6, 7], nbytes=300_001,
            fabric=fabric, routing=None, config=odd, seed=4,
        )  # fmt: skip
    return cases


CASES = _cases()


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def fingerprint(result: PacketResult) -> dict[str, Any]:
    """What a golden test pins of one traffic run."""
    counters = dict(result.counters)
    assert tuple(sorted(counters)) == tuple(sorted(COUNTERS))
    return {
        "events": result.events,
        "counters": {k: v for k, v in counters.items() if v},
        "fct": result.fct.tolist(),
        "makespan": result.makespan,
        "fairness": result.fairness,
        "queue_series": _digest(result.queue_series),
        "ports": _digest(result.ports),
    }


def run_case(name: str) -> dict[str, Any]:
    """Run golden case ``name`` and fingerprint it."""
    kw = dict(CASES[name])
    topology = kw.pop("topology")()
    return fingerprint(run_packet_traffic(topology, **kw))


def engine_fingerprint() -> dict[str, Any]:
    """A ring all-reduce on two DGX H100 nodes through :class:`PacketEngine` (GPU NVLink and
    PCIe ports, credits, PXN legs), plus an all-gather on the RoCE variant."""
    from commwall.cluster import cluster_from_option
    from commwall.collectives.ops import Op
    from commwall.collectives.schedule import CollectiveTask, Schedule
    from commwall.engines.communicators import world_group
    from commwall.engines.packet.engine import PacketEngine

    out: dict[str, Any] = {}
    for preset, op in (("dgx-h100", Op.ALL_REDUCE), ("dgx-h100-roce", Op.ALL_GATHER)):
        cl = cluster_from_option(preset, nodes=2, sharp=None, gdr=None)
        task = CollectiveTask(op, 4e6, world_group(cl, cl.world(None)), "ring", None)
        result = PacketEngine().run(Schedule.single(task), cl, seed=5)
        packet = dict(result.details["packet"])
        for volatile in ("wall_s", "events_per_s"):
            packet.pop(volatile)
        out[preset] = {
            "makespan": result.makespan,
            "phases": [(p.start, p.end) for p in result.phases],
            "counters": {k: v for k, v in result.counters.items() if v},
            "details": _digest(packet),
        }
    return out


# the pinned outputs (generated by running this module; see the module doc)
# fmt: off
GOLDEN: dict[str, dict[str, Any]] = {'ber-ib': {'counters': {'corrupt_packets': 1373.0,
                         'corrupted': 5603328.0,
                         'delivered': 4194304.0,
                         'discarded': 22585344.0,
                         'events': 123895.0,
                         'peak_buffer_bytes': 127782.0,
                         'retransmitted': 28188672.0,
                         'sent': 32382976.0,
                         'timeouts': 51.0},
            'events': 123895,
            'fairness': 0.25324468085106383,
            'fct': [0.26829868688, 0.268259084, 0.40222742704, 0.33524141672, 0.20127640264,
                    0.00019885016, 0.40215810736, 0.20124966488, 0.33517442456, 0.26826248552,
                    0.20124985136, 0.13420626576, 0.13420879, 2.857688e-05, 0.2011541336,
                    0.06720565256],
            'makespan': 0.40222742704,
            'ports': 'b98ed25293b8d939',
            'queue_series': 'a11bc4b4e114fda7'},
 'ber-lossy': {'counters': {'corrupt_packets': 209.0,
                            'corrupted': 851968.0,
                            'delivered': 4194304.0,
                            'duplicate': 4096.0,
                            'events': 26693.0,
                            'peak_buffer_bytes': 45958.0,
                            'retransmitted': 856064.0,
                            'sent': 5050368.0,
                            'timeouts': 38.0},
               'events': 26693,
               'fairness': 0.873101695230306,
               'fct': [0.00082833104, 0.00101613728, 0.00101480032, 0.00070224016, 0.00138647736,
                       0.00071968392, 0.00041058, 0.0008866784, 0.00038218984, 0.00124066296,
                       0.00091754184, 0.00076011104, 0.00095803424, 0.00025141616, 0.00080127984,
                       0.00053462896],
               'makespan': 0.00138647736,
               'ports': 'a351c9a75f7e0b61',
               'queue_series': '10c31c14cc632256'},
 'ber-roce': {'counters': {'cnps_received': 3.0,
                           'cnps_sent': 3.0,
                           'corrupt_packets': 1412.0,
                           'corrupted': 5779456.0,
                           'delivered': 4194304.0,
                           'discarded': 23486464.0,
                           'ecn_marks': 9.0,
                           'events': 109455.0,
                           'peak_buffer_bytes': 618344.0,
                           'retransmitted': 29265920.0,
                           'sent': 33460224.0,
                           'timeouts': 35.0},
              'events': 109455,
              'fairness': 0.3685417843026539,
              'fct': [0.000298600468, 0.2684671108, 0.33523229624, 0.2011432424, 0.26824180208,
                      0.06720547624, 0.00015491432, 0.20127312808, 0.20132041776, 0.26831123216,
                      0.06722177856, 0.06730228416, 0.13422527416, 4.503376e-05, 0.06726953216,
                      0.20125328776],
              'makespan': 0.33523229624,
              'ports': '20d6bacf4507e1ac',
              'queue_series': '861a29b4cd13f218'},
 'ber-uec': {'counters': {'corrupt_packets': 199.0,
                          'corrupted': 811008.0,
                          'delivered': 4194304.0,
                          'duplicate': 4096.0,
                          'events': 26006.0,
                          'peak_buffer_bytes': 87738.0,
                          'retransmitted': 815104.0,
                          'sent': 5009408.0,
                          'timeouts': 34.0},
             'events': 26006,
             'fairness': 0.994516367631538,
             'fct': [0.0002926024, 0.00030211712, 0.00016352528, 0.00016353552, 0.00028813576,
                     0.00060399968, 0.00016576104, 0.00027394168, 0.00040645712, 0.00016610328,
                     0.00028851472, 0.00027632096, 0.0004760188, 0.00024331008, 0.00027673336,
                     0.00029093256],
             'makespan': 0.00060399968,
             'ports': '78253640bb3a728f',
             'queue_series': 'a720a1aea9cdc8bf'},
 'incast15-ib': {'counters': {'delivered': 7864320.0,
                              'events': 51991.0,
                              'peak_buffer_bytes': 197856.0,
                              'sent': 7864320.0},
                 'events': 51991,
                 'fairness': 0.40475502756425186,
                 'fct': [0.00012119848, 0.00046019176, 0.00046118104, 0.00050569864, 0.0003823684,
                         0.00038302792, 0.00053306872, 0.00053372824, 0.00038368744, 0.00038434696,
                         0.00050635816, 0.00063496456, 0.00063529432, 0.00060231832, 0.000591766],
                 'makespan': 0.00063529432,
                 'ports': '8cb374892a83cf59',
                 'queue_series': 'dcf96221e3ab73a6'},
 'incast15-lossy': {'counters': {'delivered': 7864320.0,
                                 'drop_packets': 184.0,
                                 'dropped': 753664.0,
                                 'events': 46498.0,
                                 'peak_buffer_bytes': 1863388.0,
                                 'retransmitted': 753664.0,
                                 'sent': 8617984.0,
                                 'timeouts': 10.0},
                    'events': 46498,
                    'fairness': 0.529765553806644,
                    'fct': [0.00014855224, 0.00078097704, 0.00077863736, 0.00078514904, 0.000407254,
                            0.0004105964, 0.0008023564, 0.00080503032, 0.0004139388, 0.00041761544,
                            0.00077328952, 0.00087385976, 0.00092296904, 0.00087452824,
                            0.00085097032],
                    'makespan': 0.00092296904,
                    'ports': '2a2819530f3c452a',
                    'queue_series': '6a3a8ee17ecf2e24'},
 'incast15-roce': {'counters': {'cnps_received': 99.0,
                                'cnps_sent': 99.0,
                                'delivered': 7864320.0,
                                'ecn_marks': 1312.0,
                                'events': 45847.0,
                                'pause_frames': 20.0,
                                'pause_frames_sent': 20.0,
                                'paused_s': 7.51504e-05,
                                'peak_buffer_bytes': 2653030.0,
                                'ports_paused': 2.0,
                                'resume_frames_sent': 20.0,
                                'sent': 7864320.0},
                   'events': 45847,
                   'fairness': 0.407694806701629,
                   'fct': [0.00012348424, 0.00046708296, 0.00046808568, 0.00051454504, 0.0003871996,
                           0.00038786808, 0.00055699352, 0.000557662, 0.00038853656, 0.00038920504,
                           0.00051521352, 0.00064322744, 0.00064389592, 0.00064356168,
                           0.00055799624],
                   'makespan': 0.00064389592,
                   'ports': '128b717ec3fe178a',
                   'queue_series': 'a929df6073874289'},
 'incast15-roce-nopfc': {'counters': {'cnps_received': 110.0,
                                      'cnps_sent': 110.0,
                                      'delivered': 7864320.0,
                                      'discarded': 2342912.0,
                                      'drop_packets': 378.0,
                                      'dropped': 1548288.0,
                                      'ecn_marks': 1844.0,
                                      'events': 57416.0,
                                      'peak_buffer_bytes': 1863388.0,
                                      'retransmitted': 3891200.0,
                                      'sent': 11755520.0},
                         'events': 57416,
                         'fairness': 0.407694806701629,
                         'fct': [0.00012348424, 0.00072043688, 0.00071876568, 0.00078761912,
                                 0.0003253652, 0.00032569944, 0.00070907272, 0.00080901048,
                                 0.00032603368, 0.00032636792, 0.000758206, 0.0007816028,
                                 0.00078895608, 0.00080032024, 0.001393038284],
                         'makespan': 0.001393038284,
                         'ports': 'ec9002b2ec333fb1',
                         'queue_series': '9f3158d761cf21be'},
 'incast15-uec': {'counters': {'delivered': 7864320.0,
                               'ecn_marks': 1358.0,
                               'events': 52933.0,
                               'peak_buffer_bytes': 417800.0,
                               'repaths': 22.0,
                               'retransmitted': 1466368.0,
                               'sent': 9330688.0,
                               'trim_packets': 358.0,
                               'trimmed': 1466368.0},
                  'events': 52933,
                  'fairness': 0.9800080632059066,
                  'fct': [0.00063068808, 0.000608294, 0.00065187144, 0.00059124776, 0.00064622424,
                          0.00064138376, 0.00057687544, 0.00055715528, 0.00062567448, 0.0005264052,
                          0.00052907912, 0.00056116616, 0.00057019064, 0.00060094072,
                          0.00058589992],
                  'makespan': 0.00065187144,
                  'ports': '751700e0ee797ee0',
                  'queue_series': 'dfc274f8d81aad99'},
 'incast8-small-buffer-ib-adaptive': {'counters': {'delivered': 2097152.0,
                                                   'events': 12660.0,
                                                   'peak_buffer_bytes': 189612.0,
                                                   'sent': 2097152.0},
                                      'events': 12660,
                                      'fairness': 0.6364234056541749,
                                      'fct': [6.019288e-05, 0.00013933528, 0.00013900552,
                                              0.00016868392, 0.00017066248, 0.00016934344,
                                              0.00017099224, 0.00013372936],
                                      'makespan': 0.00017099224,
                                      'ports': '6b70dea81f40d5f8',
                                      'queue_series': 'e30206d770fc9c71'},
 'incast8-small-buffer-ib-ecmp': {'counters': {'delivered': 2097152.0,
                                               'events': 12576.0,
                                               'peak_buffer_bytes': 189612.0,
                                               'sent': 2097152.0},
                                  'events': 12576,
                                  'fairness': 0.5981110738817222,
                                  'fct': [5.788456e-05, 0.00016769464, 0.00016835416, 0.00013076152,
                                          0.00010932712, 0.00010998664, 0.00017066248,
                                          0.00017099224],
                                  'makespan': 0.00017099224,
                                  'ports': '47c1e5cac4c6fa58',
                                  'queue_series': '79e4727da0881ec7'},
 'incast8-small-buffer-ib-spray': {'counters': {'delivered': 2097152.0,
                                                'events': 12642.0,
                                                'peak_buffer_bytes': 189612.0,
                                                'sent': 2097152.0},
                                   'events': 12642,
                                   'fairness': 0.6299101198402131,
                                   'fct': [5.953336e-05, 0.00015384472, 0.00015780184,
                                           0.00017099224, 0.00017033272, 0.0001696732,
                                           0.00016934344, 0.00012779368],
                                   'makespan': 0.00017099224,
                                   'ports': 'f8561a94ff778fa4',
                                   'queue_series': '1e65e2fbc70026ad'},
 'incast8-small-buffer-lossy-adaptive': {'counters': {'delivered': 2097152.0,
                                                      'drop_packets': 81.0,
                                                      'dropped': 331776.0,
                                                      'events': 11823.0,
                                                      'peak_buffer_bytes': 58492.0,
                                                      'retransmitted': 331776.0,
                                                      'sent': 2428928.0,
                                                      'timeouts': 8.0},
                                         'events': 11823,
                                         'fairness': 0.40027969018932874,
                                         'fct': [0.00024449896, 0.0003418308, 0.0002958788,
                                                 0.00039929608, 0.00038375992, 0.000343502,
                                                 0.00040346808, 0.00040681048],
                                         'makespan': 0.00040681048,
                                         'ports': 'aa23fb4b8c97e61d',
                                         'queue_series': '8340863c8611ed9e'},
 'incast8-small-buffer-lossy-ecmp': {'counters': {'delivered': 2097152.0,
                                                  'drop_packets': 90.0,
                                                  'dropped': 368640.0,
                                                  'events': 11794.0,
                                                  'peak_buffer_bytes': 58492.0,
                                                  'retransmitted': 368640.0,
                                                  'sent': 2465792.0,
                                                  'timeouts': 8.0},
                                     'events': 11794,
                                     'fairness': 0.5959746340576416,
                                     'fct': [0.00026197144, 0.00032342536, 0.0003254308,
                                             0.0003914132, 0.00033428216, 0.0002956828,
                                             0.00039910072, 0.00040962328],
                                     'makespan': 0.00040962328,
                                     'ports': 'd89bc2698042ec42',
                                     'queue_series': '97dc9f5659bb468a'},
 'incast8-small-buffer-lossy-spray': {'counters': {'delivered': 2097152.0,
                                                   'drop_packets': 63.0,
                                                   'dropped': 258048.0,
                                                   'events': 11565.0,
                                                   'peak_buffer_bytes': 58492.0,
                                                   'retransmitted': 258048.0,
                                                   'sent': 2355200.0,
                                                   'timeouts': 4.0},
                                      'events': 11565,
                                      'fairness': 0.7854601790222631,
                                      'fct': [0.00025211624, 0.00033507512, 0.00034031896,
                                              0.00021515512, 0.00031723416, 0.00029411448,
                                              0.00041826488, 0.00029110632],
                                      'makespan': 0.00041826488,
                                      'ports': '1391656c8ed30f87',
                                      'queue_series': 'e207ce2edc8dbfba'},
 'incast8-small-buffer-roce-adaptive': {'counters': {'delivered': 2097152.0,
                                                     'events': 11150.0,
                                                     'pause_frames': 107.0,
                                                     'pause_frames_sent': 107.0,
                                                     'paused_s': 0.002226376,
                                                     'peak_buffer_bytes': 200544.0,
                                                     'ports_paused': 27.0,
                                                     'resume_frames_sent': 107.0,
                                                     'sent': 2097152.0},
                                        'events': 11150,
                                        'fairness': 0.6777988835478369,
                                        'fct': [6.4658e-05, 0.00015189464, 0.00015390008,
                                                0.0001716148, 0.000173286, 0.00017261752,
                                                0.00017295176, 0.00015623976],
                                        'makespan': 0.000173286,
                                        'ports': '3b2ce39beb5775ec',
                                        'queue_series': '14bc87d0e6254304'},
 'incast8-small-buffer-roce-ecmp': {'counters': {'delivered': 2097152.0,
                                                 'events': 11130.0,
                                                 'pause_frames': 97.0,
                                                 'pause_frames_sent': 97.0,
                                                 'paused_s': 0.00182948112,
                                                 'peak_buffer_bytes': 200544.0,
                                                 'ports_paused': 23.0,
                                                 'resume_frames_sent': 97.0,
                                                 'sent': 2097152.0},
                                    'events': 11130,
                                    'fairness': 0.6151574803149606,
                                    'fct': [6.064712e-05, 0.00017295176, 0.000173286, 0.00013384568,
                                            0.00010610376, 0.00010443256, 0.00017128056,
                                            0.00016927512],
                                    'makespan': 0.000173286,
                                    'ports': '08cd8dfa9ecee872',
                                    'queue_series': '7667a698c7ed0076'},
 'incast8-small-buffer-roce-nopfc-adaptive': {'counters': {'delivered': 2097152.0,
                                                           'drop_packets': 684.0,
                                                           'dropped': 2801664.0,
                                                           'events': 21297.0,
                                                           'peak_buffer_bytes': 58492.0,
                                                           'retransmitted': 2801664.0,
                                                           'sent': 4898816.0,
                                                           'timeouts': 18.0},
                                              'events': 21297,
                                              'fairness': 0.1772602248265965,
                                              'fct': [2.78916e-05, 0.06705824856, 0.2010953372,
                                                      0.26811488424, 0.06707161816, 0.2010819676,
                                                      0.13404737976, 0.26811655544],
                                              'makespan': 0.26811655544,
                                              'ports': 'cf208bc935a6d878',
                                              'queue_series': '44136fa355b3678a'},
 'incast8-small-buffer-roce-nopfc-ecmp': {'counters': {'delivered': 2097152.0,
                                                       'discarded': 450560.0,
                                                       'drop_packets': 679.0,
                                                       'dropped': 2781184.0,
                                                       'events': 21876.0,
                                                       'peak_buffer_bytes': 58492.0,
                                                       'retransmitted': 3231744.0,
                                                       'sent': 5328896.0,
                                                       'timeouts': 9.0},
                                          'events': 21876,
                                          'fairness': 0.17923216444981863,
                                          'fct': [2.78916e-05, 9.757464e-05, 0.13406583208,
                                                  0.13409540632, 6.682456e-05, 0.20108036552,
                                                  0.06705791432, 0.06704053384],
                                          'makespan': 0.20108036552,
                                          'ports': '6f1c6ecdc9faae36',
                                          'queue_series': '44136fa355b3678a'},
 'incast8-small-buffer-roce-nopfc-spray': {'counters': {'delivered': 2097152.0,
                                                        'drop_packets': 682.0,
                                                        'dropped': 2793472.0,
                                                        'events': 21128.0,
                                                        'peak_buffer_bytes': 58492.0,
                                                        'retransmitted': 2793472.0,
                                                        'sent': 4890624.0,
                                                        'timeouts': 21.0},
                                           'events': 21128,
                                           'fairness': 0.17777044854881266,
                                           'fct': [2.78916e-05, 0.20109476184, 0.13408183048,
                                                   0.26816764904, 0.26816998872, 0.20113874328,
                                                   0.2011497732, 0.13409981032],
                                           'makespan': 0.26816998872,
                                           'ports': '5471f88745147865',
                                           'queue_series': '44136fa355b3678a'},
 'incast8-small-buffer-roce-spray': {'counters': {'delivered': 2097152.0,
                                                  'events': 11150.0,
                                                  'pause_frames': 107.0,
                                                  'pause_frames_sent': 107.0,
                                                  'paused_s': 0.0022259164,
                                                  'peak_buffer_bytes': 192188.0,
                                                  'ports_paused': 27.0,
                                                  'resume_frames_sent': 107.0,
                                                  'sent': 2097152.0},
                                     'events': 11150,
                                     'fairness': 0.672766944488127,
                                     'fct': [6.398952e-05, 0.00015924792, 0.000148218,
                                             0.00017295176, 0.00017228328, 0.000173286,
                                             0.00017094632, 0.00014353864],
                                     'makespan': 0.000173286,
                                     'ports': '5ec34718f13496ce',
                                     'queue_series': '7808ec38c92c9abb'},
 'incast8-small-buffer-uec-adaptive': {'counters': {'delivered': 2097152.0,
                                                    'events': 23951.0,
                                                    'peak_buffer_bytes': 58492.0,
                                                    'retransmitted': 2809856.0,
                                                    'sent': 4907008.0,
                                                    'trim_packets': 686.0,
                                                    'trimmed': 2809856.0},
                                       'events': 23951,
                                       'fairness': 0.7459739474552051,
                                       'fct': [0.00010403272, 8.326376e-05, 0.00019603336,
                                               0.0001574124, 0.00015139608, 0.00016042056,
                                               0.00015206456, 0.00017528824],
                                       'makespan': 0.00019603336,
                                       'ports': '8a6e720b49ced4c3',
                                       'queue_series': '9b09d2c7e260e5ac'},
 'incast8-small-buffer-uec-ecmp': {'counters': {'delivered': 2097152.0,
                                                'events': 21171.0,
                                                'peak_buffer_bytes': 58492.0,
                                                'retransmitted': 2011136.0,
                                                'sent': 4108288.0,
                                                'trim_packets': 491.0,
                                                'trimmed': 2011136.0},
                                   'events': 21171,
                                   'fairness': 0.5169952413324269,
                                   'fct': [5.659032e-05, 0.00016231432, 0.00018443128,
                                           0.00011445064, 0.00011846152, 0.00012380936,
                                           0.00015496104, 0.00017992504],
                                   'makespan': 0.00018443128,
                                   'ports': '10b78608e9a722be',
                                   'queue_series': '70e44d6faf30973d'},
 'incast8-small-buffer-uec-spray': {'counters': {'delivered': 2097152.0,
                                                 'events': 25227.0,
                                                 'peak_buffer_bytes': 58492.0,
                                                 'retransmitted': 2945024.0,
                                                 'sent': 5042176.0,
                                                 'trim_packets': 719.0,
                                                 'trimmed': 2945024.0},
                                    'events': 25227,
                                    'fairness': 0.6833962812318419,
                                    'fct': [6.992632e-05, 0.000145842, 0.0001354652, 0.00020017896,
                                            0.00016676184, 0.00014216536, 0.00016843816,
                                            0.00016259496],
                                    'makespan': 0.00020017896,
                                    'ports': '360ce16719e60c0a',
                                    'queue_series': '9041891dc2ab0660'},
 'leaf-spine-ib': {'counters': {'delivered': 1500005.0,
                                'events': 7574.0,
                                'peak_buffer_bytes': 134810.0,
                                'sent': 1500005.0},
                   'events': 7574,
                   'fairness': 0.9361223960584321,
                   'fct': [5.963984e-05, 7.4986e-05, 7.523344e-05, 4.834352e-05, 4.834864e-05],
                   'makespan': 7.523344e-05,
                   'ports': '6384937444d9d80b',
                   'queue_series': '2ebe29d7de6af67f'},
 'leaf-spine-roce': {'counters': {'delivered': 1500005.0,
                                  'events': 6894.0,
                                  'peak_buffer_bytes': 138450.0,
                                  'sent': 1500005.0},
                     'events': 6894,
                     'fairness': 0.9301868584963593,
                     'fct': [6.13648e-05, 7.69572e-05, 7.72136e-05, 4.856752e-05, 4.857264e-05],
                     'makespan': 7.72136e-05,
                     'ports': '760d5fa693d276b7',
                     'queue_series': 'e0ad1bf701d2264a'},
 'leaf-spine-uec': {'counters': {'delivered': 1500005.0,
                                 'ecn_marks': 171.0,
                                 'events': 11509.0,
                                 'peak_buffer_bytes': 213000.0,
                                 'repaths': 1.0,
                                 'retransmitted': 6144.0,
                                 'sent': 1506149.0,
                                 'trim_packets': 3.0,
                                 'trimmed': 6144.0},
                    'events': 11509,
                    'fairness': 0.8156650115099975,
                    'fct': [0.00013407088, 8.334728e-05, 8.138528e-05, 3.151888e-05, 3.14592e-05],
                    'makespan': 0.00013407088,
                    'ports': '42b522c0155bccb0',
                    'queue_series': 'c0b73c6d872d4d62'},
 'permutation-ib': {'counters': {'delivered': 8388608.0,
                                 'events': 54161.0,
                                 'peak_buffer_bytes': 123660.0,
                                 'sent': 8388608.0},
                    'events': 54161,
                    'fairness': 0.9334035870060543,
                    'fct': [9.490744e-05, 9.253088e-05, 7.785416e-05, 7.734232e-05, 0.00010039992,
                            9.973528e-05, 9.177272e-05, 9.038008e-05, 0.00010042752, 9.844704e-05,
                            9.184952e-05, 9.153512e-05, 0.00010143632, 9.97856e-05, 4.961976e-05,
                            8.143336e-05],
                    'makespan': 0.00010143632,
                    'ports': '6469ee2d364e0fb8',
                    'queue_series': '753d2927668c6696'},
 'permutation-ib-adaptive': {'counters': {'delivered': 8388608.0,
                                          'events': 52551.0,
                                          'peak_buffer_bytes': 131904.0,
                                          'sent': 8388608.0},
                             'events': 52551,
                             'fairness': 0.9962923378915282,
                             'fct': [5.313448e-05, 5.443624e-05, 5.657544e-05, 5.464e-05,
                                     5.624568e-05, 5.746744e-05, 5.77972e-05, 4.919592e-05,
                                     5.713456e-05, 4.946936e-05, 5.21452e-05, 5.614328e-05,
                                     5.21708e-05, 5.11284e-05, 5.678744e-05, 5.616376e-05],
                             'makespan': 5.77972e-05,
                             'ports': 'dd11a83ec6ecf078',
                             'queue_series': 'c245dd38d5cbd8bd'},
 'permutation-lossy': {'counters': {'delivered': 8388608.0,
                                    'events': 48256.0,
                                    'peak_buffer_bytes': 396910.0,
                                    'sent': 8388608.0},
                       'events': 48256,
                       'fairness': 0.9557919551205538,
                       'fct': [0.00010410936, 0.00010121744, 8.367048e-05, 8.985768e-05,
                               0.000101266, 9.282296e-05, 9.613504e-05, 8.024528e-05, 0.00010170536,
                               9.524648e-05, 9.950544e-05, 0.00010086288, 0.00010912296,
                               8.14336e-05, 6.898344e-05, 8.683496e-05],
                       'makespan': 0.00010912296,
                       'ports': '6a0d2ceaa4e9bc97',
                       'queue_series': 'e83c583398260751'},
 'permutation-lossy-spray': {'counters': {'delivered': 8388608.0,
                                          'duplicate': 12288.0,
                                          'events': 48373.0,
                                          'peak_buffer_bytes': 62670.0,
                                          'retransmitted': 12288.0,
                                          'sent': 8400896.0},
                             'events': 48373,
                             'fairness': 0.9330841741698095,
                             'fct': [0.00010361184, 0.00011881376, 0.00010612432, 8.47756e-05,
                                     0.00012740776, 7.329376e-05, 7.46512e-05, 5.79856e-05,
                                     7.625208e-05, 5.931744e-05, 7.367544e-05, 8.280472e-05,
                                     0.00013590952, 5.790368e-05, 7.223096e-05, 0.00015447432],
                             'makespan': 0.00015447432,
                             'ports': 'fd9ee783d0f4db24',
                             'queue_series': 'f0912d71bf628312'},
 'permutation-roce': {'counters': {'cnps_received': 1.0,
                                   'cnps_sent': 1.0,
                                   'delivered': 8388608.0,
                                   'ecn_marks': 1.0,
                                   'events': 48260.0,
                                   'peak_buffer_bytes': 551496.0,
                                   'sent': 8388608.0},
                      'events': 48260,
                      'fairness': 0.9207286952641979,
                      'fct': [0.00010406584, 9.319976e-05, 7.170744e-05, 7.128392e-05, 9.344184e-05,
                              9.306152e-05, 9.289912e-05, 9.349464e-05, 9.358008e-05, 9.149192e-05,
                              9.29964e-05, 9.266216e-05, 0.0001037316, 9.037752e-05, 5.020856e-05,
                              8.28076e-05],
                      'makespan': 0.00010406584,
                      'ports': '4a9c4f3f40f31681',
                      'queue_series': '80f500d17b432f4b'},
 'permutation-roce-nopfc': {'counters': {'cnps_received': 1.0,
                                         'cnps_sent': 1.0,
                                         'delivered': 8388608.0,
                                         'ecn_marks': 1.0,
                                         'events': 48260.0,
                                         'peak_buffer_bytes': 551496.0,
                                         'sent': 8388608.0},
                            'events': 48260,
                            'fairness': 0.9207286952641979,
                            'fct': [0.00010406584, 9.319976e-05, 7.170744e-05, 7.128392e-05,
                                    9.344184e-05, 9.306152e-05, 9.289912e-05, 9.349464e-05,
                                    9.358008e-05, 9.149192e-05, 9.29964e-05, 9.266216e-05,
                                    0.0001037316, 9.037752e-05, 5.020856e-05, 8.28076e-05],
                            'makespan': 0.00010406584,
                            'ports': '4a9c4f3f40f31681',
                            'queue_series': '80f500d17b432f4b'},
 'permutation-roce-spray': {'counters': {'delivered': 8388608.0,
                                         'events': 48205.0,
                                         'peak_buffer_bytes': 104450.0,
                                         'sent': 8388608.0},
                            'events': 48205,
                            'fairness': 0.9992994435535127,
                            'fct': [5.816888e-05, 5.485592e-05, 5.755672e-05, 5.380328e-05,
                                    5.62044e-05, 5.60764e-05, 5.54028e-05, 5.249704e-05,
                                    5.716104e-05, 5.414264e-05, 5.682168e-05, 5.575752e-05,
                                    5.452808e-05, 5.351896e-05, 5.444616e-05, 5.416312e-05],
                            'makespan': 5.816888e-05,
                            'ports': '2b3940192ee4d60e',
                            'queue_series': '0ac289737ba8d4b6'},
 'permutation-uec': {'counters': {'delivered': 8388608.0,
                                  'events': 48204.0,
                                  'peak_buffer_bytes': 108628.0,
                                  'sent': 8388608.0},
                     'events': 48204,
                     'fairness': 0.999600413500448,
                     'fct': [5.789608e-05, 5.592008e-05, 5.756184e-05, 5.452544e-05, 5.55308e-05,
                             5.608152e-05, 5.54028e-05, 5.417848e-05, 5.751576e-05, 5.485968e-05,
                             5.62044e-05, 5.54796e-05, 5.486232e-05, 5.524136e-05, 5.479576e-05,
                             5.480088e-05],
                     'makespan': 5.789608e-05,
                     'ports': 'f9dd2a0a5f064ad5',
                     'queue_series': '88feeb76f008221d'}}
GOLDEN_ENGINE: dict[str, Any] = {'dgx-h100': {'counters': {'delivered': 120000000.0,
                           'events': 388423.0,
                           'flows': 256.0,
                           'peak_buffer_bytes': 53586.0,
                           'sent': 120000000.0},
              'details': 'd1ed052ea36f1549',
              'makespan': 0.000156740018,
              'phases': [(0.0, 0.000156740018)]},
 'dgx-h100-roce': {'counters': {'delivered': 60000000.0,
                                'events': 194720.0,
                                'flows': 256.0,
                                'peak_buffer_bytes': 37602.0,
                                'sent': 60000000.0},
                   'details': 'aaf32561e81e5316',
                   'makespan': 9.3841399e-05,
                   'phases': [(0.0, 9.3841399e-05)]}}
# fmt: on


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_traffic(name: str) -> None:
    assert run_case(name) == GOLDEN[name]


def test_golden_engine() -> None:
    assert engine_fingerprint() == GOLDEN_ENGINE


def test_golden_cases_exercise_every_mechanism() -> None:
    """The pinned runs cover drops, trims, pauses, ECN/CNPs, timeouts, repaths, corruption,
    go-back-N discards and duplicates: otherwise a broken path could go unnoticed."""
    seen = set().union(*(g["counters"] for g in GOLDEN.values()))
    for counter in ("drop_packets", "trim_packets", "pause_frames", "ecn_marks", "cnps_received",
                    "timeouts", "repaths", "corrupt_packets", "discarded", "duplicate"):  # fmt: skip
        assert counter in seen, counter


def _repin() -> None:
    """Rewrite this file's pinned block with the current model's outputs."""
    import pprint
    from pathlib import Path

    golden = pprint.pformat({name: run_case(name) for name in sorted(CASES)}, width=100,
                            compact=True)  # fmt: skip
    engine = pprint.pformat(engine_fingerprint(), width=100, compact=True)
    path = Path(__file__)
    text = path.read_text()
    head, rest = text.split("# fmt: off\n", 1)
    _, tail = rest.split("# fmt: on\n", 1)
    block = (
        f"GOLDEN: dict[str, dict[str, Any]] = {golden}\nGOLDEN_ENGINE: dict[str, Any] = {engine}\n"
    )
    path.write_text(f"{head}# fmt: off\n{block}# fmt: on\n{tail}")


if __name__ == "__main__":  # re-pin the golden data to the current model (see the module doc)
    _repin()

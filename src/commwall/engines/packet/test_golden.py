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
    "pause_frames", "paused_s", "ports_paused", "events", "peak_buffer_bytes",
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
    from commwall.engines.flow.engine import world_group
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
GOLDEN: dict[str, dict[str, Any]] = {'ber-ib': {'counters': {'corrupt_packets': 1207.0,
                         'corrupted': 4042752.0,
                         'delivered': 4194304.0,
                         'discarded': 15753216.0,
                         'duplicate': 90112.0,
                         'events': 96692.0,
                         'peak_buffer_bytes': 127782.0,
                         'retransmitted': 19886080.0,
                         'sent': 24080384.0,
                         'timeouts': 65.0},
            'events': 96692,
            'fairness': 0.30189349402312365,
            'fct': [0.06728501096, 0.26816851384, 0.33523552584, 0.40214255432, 0.2681352276,
                    0.26815599768, 0.20110077328, 0.40224351736, 0.26816230496, 0.00021874608,
                    0.26820439904, 0.2011386592, 0.5362096056, 3.912408e-05, 0.2011931256,
                    0.26815693104],
            'makespan': 0.5362096056,
            'ports': '7d2e16c7d9fce232',
            'queue_series': '44136fa355b3678a'},
 'ber-lossy': {'counters': {'corrupt_packets': 449.0,
                            'corrupted': 1093632.0,
                            'delivered': 4194304.0,
                            'duplicate': 753664.0,
                            'events': 31509.0,
                            'peak_buffer_bytes': 45958.0,
                            'retransmitted': 1847296.0,
                            'sent': 6041600.0,
                            'timeouts': 144.0},
               'events': 31509,
               'fairness': 0.782318343340277,
               'fct': [0.00299378328, 0.002402682, 0.00454166584, 0.0016413468, 0.00209840488,
                       0.00172052024, 0.00065621392, 0.002340334, 0.0012300828, 0.00251230568,
                       0.00222943864, 0.00218228744, 0.0041535356, 0.00047884032, 0.00269842024,
                       0.00187093888],
               'makespan': 0.00454166584,
               'ports': 'd1e7743556db2242',
               'queue_series': '92f4156c29f1fd42'},
 'ber-roce': {'counters': {'cnps_received': 1.0,
                           'cnps_sent': 1.0,
                           'corrupt_packets': 1498.0,
                           'corrupted': 5283840.0,
                           'delivered': 4194304.0,
                           'discarded': 20807680.0,
                           'duplicate': 40960.0,
                           'ecn_marks': 1.0,
                           'events': 99072.0,
                           'peak_buffer_bytes': 447046.0,
                           'retransmitted': 26132480.0,
                           'sent': 30326784.0,
                           'timeouts': 63.0},
              'events': 99072,
              'fairness': 0.3389144674387697,
              'fct': [0.26829253864, 0.26823412424, 0.60322406576, 0.00024885184, 0.1341876952,
                      0.40223669152, 0.13410172248, 0.26818946304, 0.06722759504, 0.20113530328,
                      0.13426553592, 0.26819661064, 0.26816402816, 4.470064e-05, 0.40221132168,
                      0.46928065848],
              'makespan': 0.60322406576,
              'ports': 'd55415f701c780b4',
              'queue_series': '44136fa355b3678a'},
 'ber-uec': {'counters': {'corrupt_packets': 449.0,
                          'corrupted': 1032192.0,
                          'delivered': 4194304.0,
                          'duplicate': 806912.0,
                          'events': 30145.0,
                          'peak_buffer_bytes': 112806.0,
                          'retransmitted': 1839104.0,
                          'sent': 6033408.0,
                          'timeouts': 68.0},
             'events': 30145,
             'fairness': 0.9945179606576071,
             'fct': [0.00070855984, 0.00053587496, 0.00030847928, 0.00017635952, 0.00085012216,
                     0.00033046568, 0.00028515808, 0.00028347448, 0.00030707312, 0.00042128488,
                     0.000178772, 0.00029455768, 0.00061665704, 0.00016474752, 0.00016926504,
                     0.00041351448],
             'makespan': 0.00085012216,
             'ports': 'b489d263f3a22902',
             'queue_series': 'ea7d4468489b83ec'},
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
                 'ports': 'd6b601387c6892aa',
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
                    'ports': '744b82da4c2de334',
                    'queue_series': '6a3a8ee17ecf2e24'},
 'incast15-roce': {'counters': {'cnps_received': 99.0,
                                'cnps_sent': 99.0,
                                'delivered': 7864320.0,
                                'ecn_marks': 1312.0,
                                'events': 45847.0,
                                'pause_frames': 20.0,
                                'pause_frames_sent': 20.0,
                                'paused_s': 7.68216e-05,
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
                   'ports': 'faa79ae971744b2f',
                   'queue_series': 'f0eb1dd4005f60b9'},
 'incast15-roce-nopfc': {'counters': {'cnps_received': 110.0,
                                      'cnps_sent': 110.0,
                                      'delivered': 7864320.0,
                                      'discarded': 2342912.0,
                                      'drop_packets': 378.0,
                                      'dropped': 1548288.0,
                                      'ecn_marks': 1844.0,
                                      'events': 58356.0,
                                      'peak_buffer_bytes': 1863388.0,
                                      'retransmitted': 3891200.0,
                                      'sent': 11755520.0},
                         'events': 58356,
                         'fairness': 0.407694806701629,
                         'fct': [0.00012348424, 0.00072043688, 0.00071876568, 0.00078761912,
                                 0.0003253652, 0.00032569944, 0.00070907272, 0.00080901048,
                                 0.00032603368, 0.00032636792, 0.000758206, 0.0007816028,
                                 0.00078895608, 0.00080032024, 0.004070705501],
                         'makespan': 0.004070705501,
                         'ports': '77d67dd5ae75ec74',
                         'queue_series': '485bdee03d855484'},
 'incast15-uec': {'counters': {'delivered': 7864320.0,
                               'ecn_marks': 1192.0,
                               'events': 52582.0,
                               'peak_buffer_bytes': 417800.0,
                               'repaths': 37.0,
                               'retransmitted': 1409024.0,
                               'sent': 9273344.0,
                               'trim_packets': 344.0,
                               'trimmed': 1409024.0},
                  'events': 52582,
                  'fairness': 0.9593963781466646,
                  'fct': [0.00062259464, 0.00062693976, 0.00061590984, 0.00064414712, 0.00042271912,
                          0.00063863816, 0.0005754668, 0.00047385784, 0.00057914344, 0.00057479832,
                          0.0005487276, 0.00058181736, 0.000535358, 0.00057245864, 0.00065283736],
                  'makespan': 0.00065283736,
                  'ports': '1dfcd229816fde4b',
                  'queue_series': '9e42ae0698dd1349'},
 'incast8-small-buffer-ib-adaptive': {'counters': {'delivered': 2097152.0,
                                                   'events': 12623.0,
                                                   'peak_buffer_bytes': 189612.0,
                                                   'sent': 2097152.0},
                                      'events': 12623,
                                      'fairness': 0.6302083333333334,
                                      'fct': [6.019288e-05, 0.00013735672, 0.00013933528,
                                              0.00017066248, 0.00016538632, 0.00016505656,
                                              0.00017099224, 0.00015945064],
                                      'makespan': 0.00017099224,
                                      'ports': '779c2c4887df9767',
                                      'queue_series': 'ee79113bd9854fd3'},
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
                                  'ports': 'beb086ac61341aa3',
                                  'queue_series': '79e4727da0881ec7'},
 'incast8-small-buffer-ib-spray': {'counters': {'delivered': 2097152.0,
                                                'events': 12633.0,
                                                'peak_buffer_bytes': 189612.0,
                                                'sent': 2097152.0},
                                   'events': 12633,
                                   'fairness': 0.6278201725282018,
                                   'fct': [5.953336e-05, 0.00013801624, 0.00014065432,
                                           0.00017099224, 0.00017066248, 0.00016736488,
                                           0.0001680244, 0.00013735672],
                                   'makespan': 0.00017099224,
                                   'ports': '5cbd050d77d9e90d',
                                   'queue_series': '14588df2f311b76c'},
 'incast8-small-buffer-lossy-adaptive': {'counters': {'delivered': 2097152.0,
                                                      'drop_packets': 81.0,
                                                      'dropped': 331776.0,
                                                      'events': 11780.0,
                                                      'peak_buffer_bytes': 58492.0,
                                                      'retransmitted': 331776.0,
                                                      'sent': 2428928.0,
                                                      'timeouts': 7.0},
                                         'events': 11780,
                                         'fairness': 0.391183924692252,
                                         'fct': [0.00025385768, 0.00029251352, 0.00014756936,
                                                 0.0003967484, 0.00039808536, 0.00040410168,
                                                 0.00033845352, 0.00039324488],
                                         'makespan': 0.00040410168,
                                         'ports': '87d175f8a5e7d8ea',
                                         'queue_series': '56ad09aa6f64c523'},
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
                                     'ports': '56f5a002d0ce1ac2',
                                     'queue_series': '97dc9f5659bb468a'},
 'incast8-small-buffer-lossy-spray': {'counters': {'delivered': 2097152.0,
                                                   'drop_packets': 82.0,
                                                   'dropped': 335872.0,
                                                   'events': 11815.0,
                                                   'peak_buffer_bytes': 58492.0,
                                                   'retransmitted': 335872.0,
                                                   'sent': 2433024.0,
                                                   'timeouts': 8.0},
                                      'events': 11815,
                                      'fairness': 0.4215165675446049,
                                      'fct': [0.00024599768, 0.00029872584, 0.0003326452,
                                              0.00038393304, 0.00034334088, 0.00040464392,
                                              0.00039813224, 0.0004011404],
                                      'makespan': 0.00040464392,
                                      'ports': '3ac8f7951bcca349',
                                      'queue_series': '98d3661c3b6353c1'},
 'incast8-small-buffer-roce-adaptive': {'counters': {'delivered': 2097152.0,
                                                     'discarded': 1691648.0,
                                                     'duplicate': 2363392.0,
                                                     'events': 31039.0,
                                                     'pause_frames': 401.0,
                                                     'pause_frames_sent': 401.0,
                                                     'paused_s': 0.0078295212,
                                                     'peak_buffer_bytes': 200544.0,
                                                     'ports_paused': 30.0,
                                                     'resume_frames_sent': 401.0,
                                                     'retransmitted': 4055040.0,
                                                     'sent': 6152192.0},
                                        'events': 31039,
                                        'fairness': 0.6668382913806254,
                                        'fct': [6.4658e-05, 0.00024715304, 0.00021239208,
                                                0.0004774444, 0.00049449064, 0.00042196056,
                                                0.00026553624, 0.00044134648],
                                        'makespan': 0.00049449064,
                                        'ports': 'cb48fee0b9c4eaae',
                                        'queue_series': '27c9512b2d81ef40'},
 'incast8-small-buffer-roce-ecmp': {'counters': {'delivered': 2097152.0,
                                                 'events': 11122.0,
                                                 'pause_frames': 93.0,
                                                 'pause_frames_sent': 93.0,
                                                 'paused_s': 0.0018458096,
                                                 'peak_buffer_bytes': 200544.0,
                                                 'ports_paused': 23.0,
                                                 'resume_frames_sent': 93.0,
                                                 'sent': 2097152.0},
                                    'events': 11122,
                                    'fairness': 0.6151574803149606,
                                    'fct': [6.064712e-05, 0.00017228328, 0.00017261752,
                                            0.00013117176, 0.00010610376, 0.00010443256,
                                            0.00017295176, 0.000173286],
                                    'makespan': 0.000173286,
                                    'ports': 'f04c81d7a4d5aa5b',
                                    'queue_series': '716a68ffa8dbf9cc'},
 'incast8-small-buffer-roce-nopfc-adaptive': {'counters': {'delivered': 2097152.0,
                                                           'discarded': 532480.0,
                                                           'drop_packets': 668.0,
                                                           'dropped': 2736128.0,
                                                           'events': 21805.0,
                                                           'peak_buffer_bytes': 58492.0,
                                                           'retransmitted': 3268608.0,
                                                           'sent': 5365760.0,
                                                           'timeouts': 8.0},
                                              'events': 21805,
                                              'fairness': 0.1772602248265965,
                                              'fct': [2.78916e-05, 6.398952e-05, 0.06706984296,
                                                      9.490072e-05, 0.06704120232, 0.13408564424,
                                                      0.13405473304, 0.1341078652],
                                              'makespan': 0.1341078652,
                                              'ports': 'b0ffeb3d98b81fa5',
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
                                          'ports': 'e2ed47bddb5204ae',
                                          'queue_series': '44136fa355b3678a'},
 'incast8-small-buffer-roce-nopfc-spray': {'counters': {'delivered': 2097152.0,
                                                        'discarded': 5177344.0,
                                                        'drop_packets': 2393.0,
                                                        'dropped': 9801728.0,
                                                        'duplicate': 114688.0,
                                                        'events': 49672.0,
                                                        'peak_buffer_bytes': 62670.0,
                                                        'retransmitted': 15093760.0,
                                                        'sent': 17190912.0,
                                                        'timeouts': 35.0},
                                           'events': 49672,
                                           'fairness': 0.14497563946406822,
                                           'fct': [2.78916e-05, 0.40218191736, 0.3350913852,
                                                   0.40212129368, 0.20119005512, 0.4021881988,
                                                   0.26814542808, 0.33516307368],
                                           'makespan': 0.4021881988,
                                           'ports': '9e712f135f1eb041',
                                           'queue_series': '44136fa355b3678a'},
 'incast8-small-buffer-roce-spray': {'counters': {'delivered': 2097152.0,
                                                  'discarded': 9134080.0,
                                                  'duplicate': 3747840.0,
                                                  'events': 61402.0,
                                                  'pause_frames': 947.0,
                                                  'pause_frames_sent': 947.0,
                                                  'paused_s': 0.01781296648,
                                                  'peak_buffer_bytes': 196366.0,
                                                  'ports_paused': 29.0,
                                                  'resume_frames_sent': 947.0,
                                                  'retransmitted': 12881920.0,
                                                  'sent': 14979072.0},
                                     'events': 61402,
                                     'fairness': 0.2258593936500358,
                                     'fct': [6.398952e-05, 0.00080533384, 0.00071609176,
                                             0.00110147048, 0.0011459244, 0.00121979144,
                                             0.00121511208, 0.0007732468],
                                     'makespan': 0.00121979144,
                                     'ports': '179d176a9ebf72a4',
                                     'queue_series': '8270b41a2cb48ceb'},
 'incast8-small-buffer-uec-adaptive': {'counters': {'delivered': 2097152.0,
                                                    'events': 22892.0,
                                                    'peak_buffer_bytes': 58492.0,
                                                    'retransmitted': 2527232.0,
                                                    'sent': 4624384.0,
                                                    'trim_packets': 617.0,
                                                    'trimmed': 2527232.0},
                                       'events': 22892,
                                       'fairness': 0.6028579934504317,
                                       'fct': [6.526232e-05, 0.00020122392, 0.00015070856,
                                               0.00015554904, 0.00013499928, 0.00015237976,
                                               0.00014703192, 0.0001969828],
                                       'makespan': 0.00020122392,
                                       'ports': '10d75c663939a047',
                                       'queue_series': '893e059911b8dabf'},
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
                                   'ports': '3de22c54aceed3a8',
                                   'queue_series': '70e44d6faf30973d'},
 'incast8-small-buffer-uec-spray': {'counters': {'delivered': 2097152.0,
                                                 'events': 24494.0,
                                                 'peak_buffer_bytes': 62670.0,
                                                 'retransmitted': 2748416.0,
                                                 'sent': 4845568.0,
                                                 'trim_packets': 671.0,
                                                 'trimmed': 2748416.0},
                                    'events': 24494,
                                    'fairness': 0.518560606060606,
                                    'fct': [5.415704e-05, 0.00014256248, 0.00013183096, 0.000169034,
                                            0.0001707052, 0.00017103944, 0.00017955656,
                                            0.00017521144],
                                    'makespan': 0.00017955656,
                                    'ports': 'c608a4095a550aac',
                                    'queue_series': '685ecba9478f88c3'},
 'leaf-spine-ib': {'counters': {'delivered': 1500005.0,
                                'events': 7574.0,
                                'peak_buffer_bytes': 134810.0,
                                'sent': 1500005.0},
                   'events': 7574,
                   'fairness': 0.9361223960584321,
                   'fct': [5.963984e-05, 7.4986e-05, 7.523344e-05, 4.834352e-05, 4.834864e-05],
                   'makespan': 7.523344e-05,
                   'ports': '164d3a4cfac97f33',
                   'queue_series': '2ebe29d7de6af67f'},
 'leaf-spine-roce': {'counters': {'delivered': 1500005.0,
                                  'events': 6894.0,
                                  'peak_buffer_bytes': 138450.0,
                                  'sent': 1500005.0},
                     'events': 6894,
                     'fairness': 0.9301868584963593,
                     'fct': [6.13648e-05, 7.69572e-05, 7.72136e-05, 4.856752e-05, 4.857264e-05],
                     'makespan': 7.72136e-05,
                     'ports': '9e8ef7d0973e4ab2',
                     'queue_series': 'e0ad1bf701d2264a'},
 'leaf-spine-uec': {'counters': {'delivered': 1500005.0,
                                 'ecn_marks': 159.0,
                                 'events': 11450.0,
                                 'peak_buffer_bytes': 213000.0,
                                 'sent': 1500005.0},
                    'events': 11450,
                    'fairness': 0.8085544873639975,
                    'fct': [0.00012309184, 7.632504e-05, 7.521664e-05, 3.06916e-05, 3.06072e-05],
                    'makespan': 0.00012309184,
                    'ports': 'f74a8b9346755aed',
                    'queue_series': '0fb6ceab6baa8f04'},
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
                    'ports': '75c2fe1506c60145',
                    'queue_series': '753d2927668c6696'},
 'permutation-ib-adaptive': {'counters': {'delivered': 8388608.0,
                                          'events': 52903.0,
                                          'peak_buffer_bytes': 185490.0,
                                          'sent': 8388608.0},
                             'events': 52903,
                             'fairness': 0.9864244802838293,
                             'fct': [5.59108e-05, 6.335528e-05, 6.057352e-05, 5.897488e-05,
                                     6.023864e-05, 6.4112e-05, 6.37976e-05, 5.02196e-05,
                                     7.460784e-05, 5.530368e-05, 5.923096e-05, 7.532896e-05,
                                     6.260176e-05, 6.368504e-05, 7.262928e-05, 7.104208e-05],
                             'makespan': 7.532896e-05,
                             'ports': 'bd1424383f57ec93',
                             'queue_series': '0e6a9c3fa0a7cb48'},
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
                       'ports': 'd1893edaab5df2ec',
                       'queue_series': 'e83c583398260751'},
 'permutation-lossy-spray': {'counters': {'delivered': 8388608.0,
                                          'events': 48340.0,
                                          'peak_buffer_bytes': 45958.0,
                                          'sent': 8388608.0},
                             'events': 48340,
                             'fairness': 0.8634675598922303,
                             'fct': [0.00015400312, 0.0001140716, 7.831752e-05, 7.05252e-05,
                                     7.20684e-05, 0.00012261432, 7.821e-05, 5.781264e-05,
                                     0.00015096288, 5.712744e-05, 7.07608e-05, 0.00019393192,
                                     7.084792e-05, 5.701232e-05, 0.00015796144, 0.00011509888],
                             'makespan': 0.00019393192,
                             'ports': '27180457633252e8',
                             'queue_series': 'edcc6777aa6acb46'},
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
                      'ports': '62a8d379c741569c',
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
                            'ports': '62a8d379c741569c',
                            'queue_series': '80f500d17b432f4b'},
 'permutation-roce-spray': {'counters': {'cnps_received': 30.0,
                                         'cnps_sent': 30.0,
                                         'delivered': 8388608.0,
                                         'discarded': 37044224.0,
                                         'duplicate': 19558400.0,
                                         'ecn_marks': 113.0,
                                         'events': 275853.0,
                                         'peak_buffer_bytes': 1265934.0,
                                         'retransmitted': 56602624.0,
                                         'sent': 64991232.0},
                            'events': 275853,
                            'fairness': 0.8430981391483025,
                            'fct': [0.000466982647, 0.000434211235, 0.000437275426, 0.000453578898,
                                    0.00039919208, 0.00042675384, 0.00038277608, 0.00031298856,
                                    0.00056000917, 0.00027235096, 0.00043992456, 0.000595643034,
                                    0.000378379494, 0.00030653128, 0.000595978926, 0.000692310914],
                            'makespan': 0.000692310914,
                            'ports': '2bc0c07cac38b0bc',
                            'queue_series': 'c539b01b4f5830e0'},
 'permutation-uec': {'counters': {'delivered': 8388608.0,
                                  'ecn_marks': 31.0,
                                  'events': 48219.0,
                                  'peak_buffer_bytes': 229790.0,
                                  'repaths': 6.0,
                                  'sent': 8388608.0},
                     'events': 48219,
                     'fairness': 0.9906602500139291,
                     'fct': [6.297624e-05, 6.33156e-05, 6.365496e-05, 6.230264e-05, 5.374184e-05,
                             5.442056e-05, 5.3058e-05, 5.043912e-05, 6.520184e-05, 4.940944e-05,
                             5.338712e-05, 7.0282e-05, 5.370088e-05, 5.005496e-05, 7.262168e-05,
                             7.228744e-05],
                     'makespan': 7.262168e-05,
                     'ports': '53e7e15080415e4a',
                     'queue_series': 'd098b00137ede7dd'}}
GOLDEN_ENGINE: dict[str, Any] = {'dgx-h100': {'counters': {'delivered': 120000000.0,
                           'events': 387281.0,
                           'flows': 512.0,
                           'peak_buffer_bytes': 61830.0,
                           'sent': 120000000.0},
              'details': '8e9370bb027beb32',
              'makespan': 9.8855046e-05,
              'phases': [(0.0, 9.8855046e-05)]},
 'dgx-h100-roce': {'counters': {'delivered': 60000256.0,
                                'events': 192643.0,
                                'flows': 512.0,
                                'peak_buffer_bytes': 62670.0,
                                'sent': 60000256.0},
                   'details': '7d9546712f4f8867',
                   'makespan': 5.8180866e-05,
                   'phases': [(0.0, 5.8180866e-05)]}}
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


if __name__ == "__main__":  # re-pin: print the golden data of the current model
    import pprint

    print("GOLDEN = ", end="")
    pprint.pprint({name: run_case(name) for name in sorted(CASES)}, width=100, compact=True)
    print("GOLDEN_ENGINE = ", end="")
    pprint.pprint(engine_fingerprint(), width=100, compact=True)

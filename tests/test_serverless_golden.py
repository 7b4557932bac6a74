"""simulate against stored results: three runs whose expected ``SimulationResult`` was produced by
the code of main at 6e8e38b (before the per-request loop was made faster), compared to the last bit.
They cover batching with a service time per batch, snapshot restores, a binding ``max_workers``,
an active worker, unsorted arrivals, idle timeouts of 0 and of a million seconds."""

import pytest

from lab_utils import serverless as s
from lab_utils.serverless import SimulationResult


def _batch_s(n):
    return 0.4 + 0.15 * n**0.8


_RESTORING = s.ColdStart(
    (("container start", 2.5), ("weight load", 6.75)), restore_s=1.25, restore_hit_rate=0.5
)
_PRICE = dict(price_per_worker_s=0.0004)
# fmt: off
RUNS = {  # name: (arrivals, simulate's keywords)
    "batching, restores, a binding max_workers": (
        s.bursty_arrivals(6, 20.0, 60.0, 1.5, 2),
        dict(service_s=_batch_s, cold_start_s=_RESTORING, idle_timeout_s=4.0, max_workers=2, concurrency=3),
    ),
    "one at a time, active workers, unsorted": (
        list(reversed(s.poisson_arrivals(0.5, 40.0, 4))),
        dict(service_s=1.7, cold_start_s=9.0, idle_timeout_s=0.0, max_workers=3, active_workers=1,
             active_price_per_worker_s=0.0001, duration_s=50.0),
    ),
    "a long idle timeout": (
        s.poisson_arrivals(1.5, 15.0, 9),
        dict(service_s=_batch_s, cold_start_s=3.25, idle_timeout_s=1e6, max_workers=5, concurrency=2),
    ),
}
EXPECTED = {
    "batching, restores, a binding max_workers": (
        SimulationResult(cost_usd=0.0264, cold_starts=6, latencies_s=(9.8, 9.868684227840669,
        8.992105770779533, 1.7999999999999996, 1.7426722555939873, 1.830430612152404, 9.8,
        9.686534787987327, 9.377001982506307, 1.8000000000000007, 1.909878817045275, 1.9155543491494669,
        9.799999999999997, 9.85545843885999, 9.785265861956184, 1.7999999999999972, 1.5715900812051729,
        1.6035224802236883), p50_s=5.4538300599645, p95_s=9.857442307207092, billed_s=66,
        active_billed_s=0, busy_s=4.567402216752626, restored_starts=3, waits_s=(9.25,
        9.207519058851831, 8.230872067987429, 1.2499999999999998, 1.0815070866051502,
        1.0691969093603002, 9.25, 9.02536961899849, 8.615768279714203, 1.25, 1.2487136480564374,
        1.1543206463573625, 9.25, 9.194293269871153, 9.02403215916408, 1.25, 0.9104249122163353,
        0.8422887774315839), in_flight=(1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3))
    ),
    "one at a time, active workers, unsorted": (
        SimulationResult(cost_usd=0.028200000000000003, cold_starts=6, latencies_s=(2.723390483431295,
        3.656141480049591, 3.9283643848442296, 2.97005688852677, 1.7000000000000028, 1.6999999999999993,
        1.6999999999999993, 2.8777574363590475, 7.42729562688649, 6.908038892239141, 5.432547992079815,
        4.111638028940963, 3.05945244707447, 2.8981271201984367, 1.6999999999999993, 1.6999999999999993,
        3.189074797896172, 7.472281584683676, 6.799243257751671, 5.236904232123356, 3.8736759052132244,
        3.1822309329336154, 1.7000000000000002), p50_s=3.1822309329336154, p95_s=7.375369953421755,
        billed_s=58, active_billed_s=50, busy_s=39.1, restored_starts=0, waits_s=(1.0233904834312924,
        1.9561414800495882, 2.2283643848442267, 1.2700568885267671, 0.0, 0.0, 0.0, 1.1777574363590482,
        5.727295626886491, 5.208038892239141, 3.732547992079816, 2.4116380289409634, 1.3594524470744709,
        1.1981271201984374, 0.0, 0.0, 1.4890747978961727, 5.772281584683677, 5.099243257751672,
        3.5369042321233555, 2.173675905213224, 1.482230932933615, 0.0), in_flight=(1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1))
    ),
    "a long idle timeout": (
        SimulationResult(cost_usd=2000.0164000000002, cold_starts=5, latencies_s=(3.8,
        3.5996275954020165, 3.8, 2.568420366139292, 2.7031615785063696, 2.34850882865134,
        1.1244932045822145, 1.1794800487164485, 0.7798298654094591, 0.6611651689888376,
        0.5499999999999998, 0.6611651689888376, 0.5499999999999998, 0.6611651689888376,
        0.5500000000000007, 0.6611651689888376, 0.5500000000000007, 0.6611651689888376,
        0.5500000000000007, 0.5500000000000007, 0.5500000000000007, 0.5500000000000007,
        0.6611651689888376, 0.5500000000000007, 0.6611651689888376, 0.5500000000000007,
        0.5500000000000007), p50_s=0.6611651689888376, p95_s=3.7398882786206045, billed_s=5000041,
        active_billed_s=0, busy_s=11.654016341348388, restored_starts=0, waits_s=(3.25,
        2.938462426413179, 3.25, 1.9072551971504543, 2.041996409517532, 1.6873436596625022,
        0.4633280355933769, 0.5183148797276109, 0.1186646964206215, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), in_flight=(1, 2, 1, 2, 2, 2, 2, 2, 2, 2,
        1, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 2, 1, 2, 1, 1))
    ),
}
# fmt: on


@pytest.mark.parametrize("name", list(RUNS))
def test_simulate_matches_the_stored_result(name):
    arrivals, keywords = RUNS[name]
    assert s.simulate(arrivals, **keywords, **_PRICE) == EXPECTED[name]

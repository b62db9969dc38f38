"""The lab report's checks (e2e/lab/lib/report.py) on figures shaped like the
committed runs: the overshoot bound fails an overshoot of the controller's own making
and passes an autoscaler that followed pods a starved machine slowed down; the
slow-start checks tell the reservation from its absence."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e", "lab", "lib"))
import report  # noqa: E402

# blind-vs-aware --short: 350/s at the peak, maxconn 10 at 200 ms a request (50/s a
# pod), target 70%: 10 replicas at the target.
PARAMS = {"needed_at_target": 10, "sidecar_maxconn": 10, "target_utilization": 70}


def verdict(peak, in_flight, highest=None):
    results = []
    report.overshoot_check(PARAMS, "mesh", {"peak_replicas": peak, "in_flight_late_peak": in_flight,
                                            "in_flight_late_peak_max": highest},
                           lambda name, ok: results.append((name, ok)))
    assert len(results) == 1
    return results[0][1]


class OvershootBound(unittest.TestCase):
    def test_clean_runs_pass(self):
        # runs/blind-vs-aware-short-2026-12-02.json: 12 replicas, requests at their 200 ms.
        self.assertTrue(verdict(12, 70.0))

    def test_overshoot_at_nominal_speed_fails(self):
        # runs/...-overshoot.json: 14 replicas while requests took 204 ms (p50).
        self.assertFalse(verdict(14, 70.0))
        self.assertFalse(verdict(13, 68.5))

    def test_no_sidecar_figure_keeps_the_nominal_bound(self):
        self.assertTrue(verdict(12, None))
        self.assertFalse(verdict(16, None))

    def test_slow_pods_raise_the_need(self):
        # runs/...-loaded-*.json: 16 replicas, settled pods at 88-94% in flight
        # (16 x 10 x 0.9 = 144 in flight: a need of 21 at 70%).
        self.assertTrue(verdict(16, 144.0))
        # ...but only as far as the sidecars' count says: 16 for a count a need of 13 holds.
        self.assertFalse(verdict(16, 90.0))

    def test_maximum_fails_unless_measured(self):
        self.assertFalse(verdict(24, 70.0))

    def test_one_high_reading_allows_what_it_asks(self):
        # A clean-clone run of 2026-12-07: the late peak read 64-87 in flight (mean
        # 68.5); meshscaler followed the 87 to 13, what it asks at 70%.
        self.assertTrue(verdict(13, 68.5, highest=87.0))
        # ...with no slack on top of that reading, and none for a reading that asks less.
        self.assertFalse(verdict(14, 68.5, highest=87.0))
        self.assertFalse(verdict(13, 68.5, highest=84.0))
        self.assertFalse(verdict(14, 70.0, highest=84.0))


def slow_start_verdicts(noreserve_peak, reserve_peak, reserve_says_reserve=True, occupancy=0.625):
    """{check text: ok} of edge-flows' slow-start checks for two arms' peaks."""
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        msg = "recommendation 10; downstream edge-lb allows only 5"
        for ns, peak, reserve in (("lab-noreserve", noreserve_peak, False),
                                  ("lab-reserve", reserve_peak, reserve_says_reserve)):
            text = msg + (" (3 starting replicas reserve 75 flows)" if reserve else "")
            f.write("100.0 %s\n" % json.dumps({"msg": "decided", "object": ns + "/web", "current": 2,
                                                "desired": peak, "message": text,
                                                "reason": "DownstreamLimit"}))
        path = f.name
    p = {"variant": "slow-start", "lb_max_utilization": 0.7, "lb_flows": 200, "pool_conns": 25,
         "start_replicas": 2, "decisions_log": path,
         "arms": {"noreserve": {"namespace": "lab-noreserve"}, "reserve": {"namespace": "lab-reserve"}}}
    figures = {"noreserve": {"peak_replicas": noreserve_peak, "edge_occupancy_peak": 1.0,
                             "bystander_errors_share_at_peak": 0.8},
               "reserve": {"peak_replicas": reserve_peak, "edge_occupancy_peak": occupancy,
                           "bystander_errors_share_at_peak": 0.0}}
    results = []
    try:
        report.edge_flows_checks(p, figures, lambda name, ok: results.append((name, ok)))
    finally:
        os.unlink(path)
    return results


class SlowStart(unittest.TestCase):
    def test_reservation_against_none_passes(self):
        # The arithmetic of the variant: 2 -> 5 -> 8 -> 10 without, 5 with.
        self.assertTrue(all(ok for _, ok in slow_start_verdicts(10, 5)))

    def test_no_difference_fails(self):
        # Both arms at 5 (the opt-out not honoured): the "no reservation" arm did not
        # go past 70%, and the arms are not told apart.
        self.assertFalse(all(ok for _, ok in slow_start_verdicts(5, 5)))
        # Both past 70% (the reservation not applied).
        self.assertFalse(all(ok for _, ok in slow_start_verdicts(10, 10, reserve_says_reserve=False)))

    def test_reservation_must_show_in_decisions(self):
        self.assertFalse(all(ok for _, ok in slow_start_verdicts(10, 5, reserve_says_reserve=False)))

    def test_table_past_the_guard_fails(self):
        self.assertFalse(all(ok for _, ok in slow_start_verdicts(10, 5, occupancy=0.75)))
        self.assertFalse(all(ok for _, ok in slow_start_verdicts(10, 6)))


if __name__ == "__main__":
    unittest.main()

"""The lab report's overshoot bound (e2e/lab/lib/report.py), on figures shaped like
the committed runs: it fails an overshoot of the controller's own making and passes
an autoscaler that followed pods a starved machine slowed down."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e", "lab", "lib"))
import report  # noqa: E402

# blind-vs-aware --short: 350/s at the peak, maxconn 10 at 200 ms a request (50/s a
# pod), target 70%: 10 replicas at the target.
PARAMS = {"needed_at_target": 10, "sidecar_maxconn": 10, "target_utilization": 70}


def verdict(peak, in_flight):
    results = []
    report.overshoot_check(PARAMS, "mesh", {"peak_replicas": peak, "in_flight_late_peak": in_flight},
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


if __name__ == "__main__":
    unittest.main()

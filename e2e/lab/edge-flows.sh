#!/usr/bin/env bash
# e2e/lab/edge-flows.sh [--short] [--keep] [--startup-delay S] — the lab's edge-flows
# scenario, both variants one after the other (each a run of e2e/lab/run.sh, whose help
# says what they do and check): without and with the downstream guardrail; then
# slow-start (new pods 20 s in an init container, the guardrail without and with the
# starting-pod reservation). Exit 1 if either fails its checks.
here="$(dirname "${BASH_SOURCE[0]}")"
rc=0
# The first run keeps the cluster up for the second (which takes it down unless --keep
# was given).
bash "$here/run.sh" edge-flows --keep "$@" || rc=1
bash "$here/run.sh" edge-flows --variant slow-start "$@" || rc=1
exit "$rc"

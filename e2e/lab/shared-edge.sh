#!/usr/bin/env bash
# e2e/lab/shared-edge.sh [--short] [--keep] [--startup-delay S] — the lab's shared-edge
# scenario: its two variants one after the other (each a run of e2e/lab/run.sh, whose
# help says what they do and check): own (each service its own downstream guardrail)
# and budget (both naming one shared budget). Exit 1 if either fails its checks.
here="$(dirname "${BASH_SOURCE[0]}")"
rc=0
# The first variant keeps the cluster up for the second (which takes it down unless
# --keep was given).
bash "$here/run.sh" shared-edge --variant own --keep "$@" || rc=1
bash "$here/run.sh" shared-edge --variant budget "$@" || rc=1
exit "$rc"

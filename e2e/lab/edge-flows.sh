#!/usr/bin/env bash
# e2e/lab/edge-flows.sh [--short] [--keep] [--startup-delay S] — the lab's edge-flows scenario;
# e2e/lab/run.sh says what it does and what it checks.
exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" edge-flows "$@"

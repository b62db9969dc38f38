#!/usr/bin/env bash
# e2e/lab/blind-vs-aware.sh [--short] [--keep] [--startup-delay S] — the lab's blind-vs-aware scenario;
# e2e/lab/run.sh says what it does and what it checks.
exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" blind-vs-aware "$@"

#!/usr/bin/env bash
# The full fault-injection run ("nothing promised is lost"):
# every scenario of tests/it/durability/ (a node on SQLite killed and
# upgraded, a node on Redis killed and Redis slowed, a fleet of three on
# Redis killed, rolled and slowed) several times, against the real binary,
# a real redis-server and a webhook receiver on loopback; prints a table of
# changes made, deliveries received, changes lost, duplicates, changes sent
# under two ids and PRAGMA integrity_check results.
#
#   scripts/fault-injection.sh                      # 3 runs of 6 changes each
#   SBAPI_FAULT_RUNS=10 SBAPI_FAULT_SEED=42 scripts/fault-injection.sh
#   SBAPI_FAULT_SCENARIOS=sqlite_upgrade,fleet_roll_add scripts/fault-injection.sh
#
# Knobs: SBAPI_FAULT_RUNS (runs per scenario, default 3), SBAPI_FAULT_CHANGES
# (changes per run, default 6), SBAPI_FAULT_SEED (replays a plan of faults;
# printed by every run), SBAPI_FAULT_SCENARIOS (names, comma-separated),
# SBAPI_FAULT_ASSERT=1 (exit non-zero when a run misses a goal),
# SBAPI_FAULT_KEEP=1 (keep each run's folder: the nodes' configurations and
# error logs, the SQLite file; the path is printed).
# Needs redis-server and redis-cli (apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --test it durability::full -- --ignored --exact --nocapture

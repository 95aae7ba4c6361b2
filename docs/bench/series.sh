#!/usr/bin/env bash
# Issue 34's throughput series (BENCHMARKS.md): T, the binary measured, and B, the one before,
# alternately, in one go, on a machine with nothing else running, both loaded by one
# load generator (cargo build --release -p tresor -p tresor-bench).
set -u
T=${T:-target/release/tresor}          # the binary measured
B=${B:-../base/target/release/tresor}  # the binary before, built the same way in a worktree
BENCH=${BENCH:-target/release/tresor-bench}  # the load generator
PG=postgres://postgres@127.0.0.1:5432/postgres
LOG=/var/log/postgresql/postgresql-15-main.log
run() { echo; echo "=== $(date -u +%H:%M:%S) $*  (load $(cut -d' ' -f1-3 /proc/loadavg))"; "$@" 2>&1 | grep -v '^\s*$'; }
# Lock waits over 10 ms logged in tresor's databases (pgbench's own left out).
count_waits() { grep 'still waiting for' $LOG | grep -vc tresor_pgbench; }
waits() { echo "--- tresor's lock waits logged during the line above: $(( $(count_waits) - $1 ))"; }
psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM SET log_lock_waits = on" -c "ALTER SYSTEM SET deadlock_timeout = '10ms'" -c "SELECT pg_reload_conf()" >/dev/null
T=$(realpath "$T"); B=$(realpath "$B"); BENCH=$(realpath "$BENCH")
cd "$(mktemp -d)"
run $BENCH --tresor $T --spawn --mix purchases --concurrency 256 --duration 10 --baselines
run $BENCH --tresor $B --spawn --mix purchases --concurrency 256 --duration 10
run $BENCH --tresor $T --spawn --mix purchases --concurrency 1 --duration 10
run $BENCH --tresor $B --spawn --mix purchases --concurrency 1 --duration 10
run $BENCH --tresor $T --spawn --mix games --concurrency 256 --duration 10
run $BENCH --tresor $B --spawn --mix games --concurrency 256 --duration 10
for d in 0 1; do
  n=$(count_waits); run $BENCH --tresor $T --spawn --database-url $PG --mix purchases --concurrency 256 --duration 10 --pg-delay-ms $d --baselines; waits $n
  run $BENCH --tresor $B --spawn --database-url $PG --mix purchases --concurrency 256 --duration 10 --pg-delay-ms $d
  run $BENCH --tresor $T --spawn --database-url $PG --mix purchases --concurrency 1 --duration 10 --pg-delay-ms $d
  run $BENCH --tresor $B --spawn --database-url $PG --mix purchases --concurrency 1 --duration 10 --pg-delay-ms $d
  n=$(count_waits); run $BENCH --tresor $T --spawn --database-url $PG --mix purchases --concurrency 256 --duration 10 --pg-delay-ms $d --servers 2 --baselines; waits $n
done
psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM RESET log_lock_waits" -c "ALTER SYSTEM RESET deadlock_timeout" -c "SELECT pg_reload_conf()" >/dev/null
echo "=== end $(date -u +%H:%M:%S)"

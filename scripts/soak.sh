#!/usr/bin/env bash
# Soak test of the echo server: mixed echo load with abrupt cancellations
# for a minute, then a check that the server's memory did not grow.
#
#   scripts/soak.sh                        # 60 s
#   SOAK_SECS=600 SOAK_WARMUP_SECS=60 scripts/soak.sh
#
# Builds the release echo_server example, starts it on 127.0.0.1 (a port
# the system picks; SOAK_WORKERS workers, default 2, --quiet) and runs
# scripts/soak_load.py against it for SOAK_SECS seconds (default 60):
# SOAK_STEADY steady clients (default 16) doing byte-checked round trips,
# and SOAK_CHURN churning clients (default 16) that disconnect abruptly in
# the middle of a message, half of them with a reset. The server's VmRSS
# is read after SOAK_WARMUP_SECS (default 10) and again just before the
# load stops.
#
# Prints both RSS numbers and exits 1 if the end RSS is more than 10% above
# the warm-up RSS (a drop is fine), if any echo differed or any steady
# client failed, if the server died, or if it did not stop cleanly on
# SIGINT afterwards (exit 0 and its summary line).
set -euo pipefail

cd "$(dirname "$0")/.."
secs="${SOAK_SECS:-60}"
warmup="${SOAK_WARMUP_SECS:-10}"
workers="${SOAK_WORKERS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

echo "soak: building the release echo_server" >&2
cargo build --release --quiet --example echo_server
server_bin="$CARGO_TARGET_DIR/release/examples/echo_server"

log="$(mktemp -t soak-echo-server.XXXXXX)"
"$server_bin" --addr 127.0.0.1:0 --workers "$workers" --quiet 2>"$log" &
pid=$!
cleanup() {
    kill "$pid" 2>/dev/null || true
    rm -f "$log"
}
trap cleanup EXIT

addr=""
for _ in $(seq 100); do
    addr="$(sed -n 's/^echo_server: listening on \([^ ]*\) .*/\1/p' "$log")"
    [ -n "$addr" ] && break
    sleep 0.1
done
if [ -z "$addr" ]; then
    echo "soak: the server did not start:" >&2
    cat "$log" >&2
    exit 1
fi
echo "soak: server pid $pid on $addr with $workers worker(s), VmRSS at start" \
    "$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status") KiB; ${secs} s of load" >&2

set +e
result="$(python3 scripts/soak_load.py --addr "$addr" --secs "$secs" --warmup "$warmup" \
    --steady "${SOAK_STEADY:-16}" --churn "${SOAK_CHURN:-16}" --pid "$pid")"
load_status=$?
set -e
echo "$result"

failed=0
if ! kill -0 "$pid" 2>/dev/null; then
    echo "soak: FAILED: the server died" >&2
    cat "$log" >&2
    exit 1
fi
rss_after="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")"

read -r warm end <<<"$(echo "$result" | awk '/^soak / {print $3, $5}')"
if [ -z "${warm:-}" ] || [ -z "${end:-}" ] || [ "$warm" -eq 0 ] || [ "$end" -eq 0 ]; then
    echo "soak: FAILED: no RSS numbers from the load program" >&2
    exit 1
fi
growth="$(awk -v w="$warm" -v e="$end" 'BEGIN { printf "%+.1f", (e - w) * 100 / w }')"
echo "soak: server VmRSS after ${warmup} s warm-up: ${warm} KiB; at the end (${secs} s): ${end} KiB" \
    "(${growth}%); after the load stopped: ${rss_after} KiB"
if [ $((end * 10)) -gt $((warm * 11)) ]; then
    echo "soak: FAILED: RSS grew by more than 10% after the warm-up" >&2
    failed=1
fi
if [ "$load_status" -ne 0 ]; then
    echo "soak: FAILED: the load program saw wrong echoes or failures (exit $load_status)" >&2
    failed=1
fi

# A clean stop: SIGINT, exit 0 within the grace period, a summary.
kill -INT "$pid"
set +e
for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
    echo "soak: the server did not exit 10 s after SIGINT; killing it" >&2
    kill -KILL "$pid"
fi
wait "$pid"
status=$?
set -e
summary="$(grep '^echo_server: stopped.' "$log" || true)"
echo "${summary:-soak: no summary line}"
if [ "$status" -ne 0 ] || [ -z "$summary" ]; then
    echo "soak: FAILED: the server exited with $status on SIGINT" >&2
    tail -20 "$log" >&2
    failed=1
fi
if [ "$failed" -ne 0 ]; then
    exit 1
fi
echo "soak: ok"

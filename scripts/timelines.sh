#!/usr/bin/env bash
# Regenerates the pictures of the book from real runs:
#
#   scripts/timelines.sh
#
# Runs three programs with the scheduler trace on, keeps the traces in
# docs/src/traces/, and draws each with examples/trace_timeline.rs into
# docs/src/img/timeline-*.svg:
#
#   toy_loop      --scale 0.05              -> timeline-toy_loop.svg
#   ping_pong     --scale 0.02 --rounds 3   -> timeline-ping_pong.svg
#                                              timeline-ping_pong-rally.svg (the rally, zoomed)
#   walkthrough_06_echo_three_clients       -> timeline-echo.svg
#
# The benchmark plot docs/src/img/sleepers.svg is bench/run.sh's, not
# this script's. Every run differs a little in its timings;
# commit the new pictures together with the traces they were drawn from.
#
# The chapters quote numbers from these traces (polls, steps, wake-ups),
# stated for tests/book_traces.rs in `<!-- trace-check: ... -->` comments.
# After each run the script checks the new trace against them
# (`cargo test --test book_traces committed_NAME`), and runs the program
# again while they do not hold: on a busy machine the kernel can wake the
# loop late, which changes a run's shape (a late coarse step makes the
# precise one unneeded). After TIMELINE_TRIES runs (20) it gives up and
# fails: then the text, or the code, has to change.
#
# Only the traces and timeline-*.svg files above are written; the script
# can be run again at any time.
set -euo pipefail

cd "$(dirname "$0")/.."
img=docs/src/img
traces=docs/src/traces
mkdir -p "$img" "$traces"

tries=${TIMELINE_TRIES:-20}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run() { cargo run --quiet --example "$@"; }

# regen NAME COMMAND...: runs COMMAND (which writes $traces/NAME.trace)
# until the trace shows what the book says about it.
regen() {
    local name=$1 attempt
    shift
    for ((attempt = 1; attempt <= tries; attempt++)); do
        "$@" >/dev/null
        if RUST_BACKTRACE=0 cargo test --quiet --test book_traces "committed_${name}_" >"$log" 2>&1; then
            return 0
        fi
        echo "  $name: run $attempt does not show what the book says; running it again"
    done
    grep -A8 'does not show what the book says' "$log" >&2 || cat "$log" >&2
    echo "$name: $tries runs, none as the book describes it" >&2
    return 1
}

echo "building the examples and the check..."
cargo build --quiet --example toy_loop --example ping_pong \
    --example walkthrough_06_echo_three_clients --example trace_timeline
cargo test --quiet --no-run --test book_traces

echo "toy_loop"
regen toy_loop env YIELDLOOP_TRACE="$traces/toy_loop.trace" \
    cargo run --quiet --example toy_loop -- --scale 0.05
run trace_timeline -- "$traces/toy_loop.trace" "$img/timeline-toy_loop.svg" \
    --title "toy_loop --scale 0.05: three jobs wait 100, 50 and 150 ms" >/dev/null

echo "ping_pong"
regen ping_pong env YIELDLOOP_TRACE="$traces/ping_pong.trace" \
    cargo run --quiet --example ping_pong -- --scale 0.02 --rounds 3
run trace_timeline -- "$traces/ping_pong.trace" "$img/timeline-ping_pong.svg" \
    --title "ping_pong --scale 0.02 --rounds 3: ping naps, pong practises, then they rally" >/dev/null
# The rally lasts a few dozen microseconds at the very end: draw it on its
# own, from the first `Yield` (the first hand-over) to the end.
rally_from=$(awk '/-> Yield/ { t = $0; sub(/^\[ */, "", t); sub(/\].*/, "", t); printf "%.6f", t - 0.00002; exit }' \
    "$traces/ping_pong.trace")
run trace_timeline -- "$traces/ping_pong.trace" "$img/timeline-ping_pong-rally.svg" \
    --from "$rally_from" \
    --title "ping_pong: the rally, zoomed in (each hand-over is a Yield)" >/dev/null

echo "echo server and three clients"
regen echo cargo run --quiet --example walkthrough_06_echo_three_clients -- \
    --trace "$traces/echo.trace"
run trace_timeline -- "$traces/echo.trace" "$img/timeline-echo.svg" \
    --title "walkthrough_06_echo_three_clients: a server, three connections, three clients" >/dev/null

for f in "$img"/timeline-*.svg; do
    python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$f"
    echo "wrote $f ($(wc -c <"$f") bytes)"
done

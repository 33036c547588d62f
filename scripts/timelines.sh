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
set -euo pipefail

cd "$(dirname "$0")/.."
img=docs/src/img
traces=docs/src/traces
mkdir -p "$img" "$traces"

run() { cargo run --quiet --example "$@"; }

echo "building the examples..."
cargo build --quiet --example toy_loop --example ping_pong \
    --example walkthrough_06_echo_three_clients --example trace_timeline

echo "toy_loop"
YIELDLOOP_TRACE="$traces/toy_loop.trace" run toy_loop -- --scale 0.05 >/dev/null
run trace_timeline -- "$traces/toy_loop.trace" "$img/timeline-toy_loop.svg" \
    --title "toy_loop --scale 0.05: three jobs wait 100, 50 and 150 ms" >/dev/null

echo "ping_pong"
YIELDLOOP_TRACE="$traces/ping_pong.trace" run ping_pong -- --scale 0.02 --rounds 3 >/dev/null
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
run walkthrough_06_echo_three_clients -- --trace "$traces/echo.trace" >/dev/null
run trace_timeline -- "$traces/echo.trace" "$img/timeline-echo.svg" \
    --title "walkthrough_06_echo_three_clients: a server, three connections, three clients" >/dev/null

for f in "$img"/timeline-*.svg; do
    python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$f"
    echo "wrote $f ($(wc -c <"$f") bytes)"
done

#!/usr/bin/env bash
# The hot path's guard: revision BASE of the library against the working
# tree, on the hand-over benchmarks, the echo server and the HTTP server,
# in pairs of runs whose order alternates, with the ratio per row.
#
#   bench/ab.sh BASE [ROWS...]
#
# BASE is any git revision (a commit, a tag, HEAD~3, main). ROWS picks rows
# by name (default: all): yield spawn pingpong mutex bounded echo64 echo512
# http64. Each row prints the median of each build over AB_PAIRS [7] pairs
# and the median and range of the pair-by-pair ratios (now / base; below 1
# is faster, or less CPU). A ratio whose range straddles 1 is within this
# machine's noise.
#
# What each row measures:
#   yield, spawn, pingpong, mutex, bounded   ns per op of
#       bench/src/bin/handover.rs (--runtime yieldloop), pinned to one core
#   echo64, echo512   the echo server's CPU (every thread's time on CPU,
#       from /proc/PID/task/*/schedstat) per round trip, bench/src/bin/
#       echo_yieldloop.rs driven by loadgen (64-byte messages) over 64 or
#       512 connections for AB_SECS [3] s
#   http64   the HTTP server's CPU per request, bench/src/bin/
#       http_yieldloop.rs driven by wrk (or, without it, http_load) over 64
#       keep-alive connections for AB_SECS s
# With two cores or more (and taskset), servers run on core 0 and the
# hand-over benchmarks and load generators on core 1.
#
# Knobs: AB_PAIRS [7], AB_OPS [2000000] ops per hand-over run (spawn and
# mutex a quarter of it), AB_SECS [3].
#
# Both builds share a target dir (bench/target/revs), so the dependencies
# are built once; the base's source is exported from git into
# bench/target/ab/base-src. Raw records go to bench/target/ab/ab.txt.
# The closing note of every change to src/scheduler, src/task*, src/io,
# src/sync or src/reactor quotes this script's table against the change's
# base.
set -uo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
AB=$BENCH/target/ab
REVS=$BENCH/target/revs
PAIRS=${AB_PAIRS:-7}
OPS=${AB_OPS:-2000000}
SECS=${AB_SECS:-3}
ALL_ROWS="yield spawn pingpong mutex bounded echo64 echo512 http64"

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
BASE=$1
shift
ROWS=${*:-$ALL_ROWS}
for r in $ROWS; do
    case " $ALL_ROWS " in *" $r "*) ;; *) echo "ab.sh: unknown row $r (rows: $ALL_ROWS)" >&2; exit 2 ;; esac
done
BASE_REV=$(git -C "$ROOT" rev-parse --short "$BASE^{commit}" 2>/dev/null) ||
    { echo "ab.sh: no revision $BASE in $ROOT" >&2; exit 2; }

log() { printf '[ab] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- builds
BINS=(handover echo_yieldloop http_yieldloop loadgen http_load)
mkdir -p "$AB/base" "$AB/now"
rm -rf "$AB/base-src"
mkdir -p "$AB/base-src"
log "exporting $BASE_REV"
git -C "$ROOT" archive "$BASE_REV" | tar -x -C "$AB/base-src" ||
    { echo "ab.sh: git archive $BASE_REV failed" >&2; exit 1; }
[ -d "$AB/base-src/bench" ] || { echo "ab.sh: $BASE_REV has no bench/ to build" >&2; exit 1; }
build() { # build $1 (base or now) from bench dir $2: the BINS it has
    local b args=()
    rm -f "$AB/$1"/*
    for b in "${BINS[@]}"; do [ -f "$2/src/bin/$b.rs" ] && args+=(--bin "$b"); done
    log "building $1 (release)"
    (cd "$2" && CARGO_TARGET_DIR=$REVS cargo build --release --quiet "${args[@]}") ||
        { echo "ab.sh: the build of $1 failed" >&2; exit 1; }
    for b in "${BINS[@]}"; do [ -f "$2/src/bin/$b.rs" ] && cp "$REVS/release/$b" "$AB/$1/$b"; done
    return 0
}
build base "$AB/base-src/bench"
build now "$BENCH"

# ---------------------------------------------------------------- measuring
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    PIN_SERVER=(taskset -c 0)
    PIN_CLIENT=(taskset -c 1)
else
    PIN_SERVER=()
    PIN_CLIENT=()
fi
if command -v wrk >/dev/null; then LOADGEN=wrk; else LOADGEN=http_load; fi
OUT=$AB/ab.txt
: >"$OUT"

oncpu_ns() { # nanoseconds every thread of process $1 has run
    local f a total=0
    for f in /proc/"$1"/task/*/schedstat; do
        read -r a _ <"$f" 2>/dev/null && total=$((total + a))
    done
    echo "$total"
}
port=$((20000 + RANDOM % 2000))
start_server() { # binary $1 of build $2: sets spid and addr
    local tries
    for tries in 1 2 3 4 5; do
        port=$((port + 1))
        addr=127.0.0.1:$port
        "${PIN_SERVER[@]}" "$AB/$2/$1" --addr "$addr" 2>"$AB/server.err" &
        spid=$!
        sleep 0.2
        kill -0 "$spid" 2>/dev/null && return 0
        wait "$spid" 2>/dev/null
    done
    return 1
}
stop_server() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }

# One run of row $1 on build $2: prints the figure, or nothing on failure.
measure() {
    local row=$1 build=$2 line c0 c1 n
    case $row in
        yield | pingpong | bounded | spawn | mutex)
            n=$OPS
            case $row in spawn | mutex) n=$((OPS / 4)) ;; esac
            line=$("${PIN_CLIENT[@]}" timeout 120 "$AB/$build/handover" --runtime yieldloop \
                --bench "$row" --ops "$n" 2>>"$AB/client.err")
            sed -n 's/.* ns_per_op=\([0-9.]*\).*/\1/p' <<<"$line"
            ;;
        echo64 | echo512)
            start_server echo_yieldloop "$build" || return
            c0=$(oncpu_ns "$spid")
            line=$("${PIN_CLIENT[@]}" "$AB/now/loadgen" --addr "$addr" --conns "${row#echo}" \
                --size 64 --duration "$SECS" --warmup 0.5 2>>"$AB/client.err")
            sleep 0.1
            c1=$(oncpu_ns "$spid")
            stop_server
            n=$(sed -n 's/.* rt_total=\([0-9]*\).*/\1/p' <<<"$line")
            [ -n "$n" ] && [ "$n" -gt 0 ] && awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.1f\n", c / n }'
            ;;
        http64)
            start_server http_yieldloop "$build" || return
            c0=$(oncpu_ns "$spid")
            if [ "$LOADGEN" = wrk ]; then
                line=$("${PIN_CLIENT[@]}" wrk -t1 -c64 -d"${SECS}s" "http://$addr/" 2>>"$AB/client.err")
                n=$(awk '/ requests in / { print $1 }' <<<"$line")
            else
                line=$("${PIN_CLIENT[@]}" "$AB/now/http_load" --addr "$addr" --conns 64 \
                    --duration "$SECS" --warmup 0 2>>"$AB/client.err")
                n=$(sed -n 's/.* requests_total=\([0-9]*\).*/\1/p' <<<"$line")
            fi
            sleep 0.1
            c1=$(oncpu_ns "$spid")
            stop_server
            [ -n "$n" ] && [ "$n" -gt 0 ] && awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.1f\n", c / n }'
            ;;
    esac
}

for pair in $(seq 1 "$PAIRS"); do
    for row in $ROWS; do
        if [ $((pair % 2)) = 1 ]; then order="base now"; else order="now base"; fi
        for build in $order; do
            v=$(measure "$row" "$build")
            if [ -n "$v" ]; then
                echo "row=$row pair=$pair build=$build value=$v" >>"$OUT"
            else
                log "$row, $build, pair $pair: failed (see $AB/client.err, $AB/server.err)"
            fi
        done
    done
    log "pair $pair/$PAIRS done"
done

# ---------------------------------------------------------------- the table
unit() { case $1 in echo*) echo "ns CPU/round trip" ;; http*) echo "ns CPU/request" ;; *) echo "ns/op" ;; esac; }
echo
echo "A/B: base $BASE_REV against the working tree ($(git -C "$ROOT" rev-parse --short HEAD)$(
    [ -n "$(git -C "$ROOT" status --porcelain -- src crates Cargo.toml)" ] && echo ', with changes')), $PAIRS pairs, alternating"
echo
printf '| %-9s | %-17s | %10s | %10s | %14s | %-13s |\n' row unit base now "ratio (pairs)" "pair range"
printf '|%s|%s|%s|%s|%s|%s|\n' ----------- ------------------- -----------: -----------: ---------------: ---------------
for row in $ROWS; do
    awk -v row="$row" -v unit="$(unit "$row")" '
        function median(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        $1 == "row=" row {
            split($2, pr, "="); split($3, b, "="); split($4, v, "=")
            val[b[2], pr[2]] = v[2]; pairs[pr[2]] = 1
        }
        END {
            nb = nn = nr = 0
            for (p in pairs) {
                if ((("base", p) in val)) bs[++nb] = val["base", p]
                if ((("now", p) in val)) ns[++nn] = val["now", p]
                if ((("base", p) in val) && (("now", p) in val) && val["base", p] > 0) {
                    r = val["now", p] / val["base", p]; rs[++nr] = r
                    if (nr == 1 || r < lo) lo = r
                    if (nr == 1 || r > hi) hi = r
                }
            }
            if (nr == 0) { printf "| %-9s | %-17s | %10s | %10s | %14s | %-13s |\n", row, unit, "-", "-", "no pair", ""; exit }
            printf "| %-9s | %-17s | %10.1f | %10.1f | %14.3f | %.3f-%.3f |\n", row, unit, median(bs, nb), median(ns, nn), median(rs, nr), lo, hi
        }' "$OUT"
done

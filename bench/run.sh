#!/usr/bin/env bash
# Builds the comparison benchmarks (release), runs them all (hand-over
# micro-benchmarks, timer lateness, sleepers, echo servers), and writes docs/benchmarks.md
# and docs/img/sleepers.svg from the raw results in bench/results/.
#
#   bench/run.sh
#
# Knobs (environment variables, defaults in brackets):
#   REPS [5]        runs per sleepers cell for N <= 10,000
#   REPS_100K [3]   runs per sleepers cell for N = 100,000
#   REPS_1M [2]     runs per sleepers cell for N = 1,000,000
#   REPS_1M_ASYNCIO [1]  the same for asyncio, which takes 40-90 s per run there
#   ECHO_REPS [3]   runs per echo cell
#   ECHO_SECS [3]   measured seconds per echo run (after ECHO_WARMUP [0.5])
#   CELL_TIMEOUT [180]  seconds before a sleepers run is killed and marked failed
#   SLEEPERS_NS ["1 1000 10000 100000 1000000"]  task counts (for quick trials)
#   HANDOVER_REPS [5]      runs per hand-over cell
#   HANDOVER_TIMEOUT [60]  seconds before a hand-over run is killed and marked failed
#   LATENESS_REPS [5]      runs per timer-lateness cell (per runtime and variant)
#   LATENESS_TASKS [1000]  sleeping tasks per timer-lateness run
#   LATENESS_MAX_MS [50]   largest random delay (ms) of a timer-lateness task
#   LATENESS_TIMEOUT [30]  seconds before a timer-lateness run is killed and marked failed
#
# Timer lateness runs twice per runtime: at normal priority, and under
# `chrt -f 50` (SCHED_FIFO, "realtime priority") when chrt works here
# (typically as root); otherwise that variant is skipped and the report says why.
#
# Every sleepers and hand-over measurement runs in its own process, so a
# crash or an out-of-memory kill only marks that cell as failed. All network load goes
# to 127.0.0.1 and is bounded in connections and time. Nothing here asserts:
# it measures and reports.
set -uo pipefail

REPS=${REPS:-5}
REPS_100K=${REPS_100K:-3}
REPS_1M=${REPS_1M:-2}
REPS_1M_ASYNCIO=${REPS_1M_ASYNCIO:-1}
ECHO_REPS=${ECHO_REPS:-3}
ECHO_SECS=${ECHO_SECS:-3}
ECHO_WARMUP=${ECHO_WARMUP:-0.5}
CELL_TIMEOUT=${CELL_TIMEOUT:-180}
SLEEPERS_NS=${SLEEPERS_NS:-1 1000 10000 100000 1000000}
HANDOVER_REPS=${HANDOVER_REPS:-5}
HANDOVER_TIMEOUT=${HANDOVER_TIMEOUT:-60}
LATENESS_REPS=${LATENESS_REPS:-5}
LATENESS_TASKS=${LATENESS_TASKS:-1000}
LATENESS_MAX_MS=${LATENESS_MAX_MS:-50}
LATENESS_TIMEOUT=${LATENESS_TIMEOUT:-30}

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
RES=$BENCH/results
BIN=$BENCH/target/release
START=$(date +%s.%N)
export RUST_BACKTRACE=0

elapsed() { awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
log() { printf '[%6ss] %s\n' "$(elapsed)" "$*" >&2; }

cd "$BENCH" || exit 1
log "building (release)"
if ! cargo build --release --quiet --bins; then
    echo "run.sh: build failed" >&2
    exit 1
fi
BUILD_S=$(elapsed)

mkdir -p "$RES" "$ROOT/docs/img"
rm -f "$RES"/handover.txt "$RES"/lateness.txt "$RES"/sleepers.txt "$RES"/echo.txt "$RES"/meta.txt "$RES"/commands.txt "$RES"/*.err

# Pinning: server and client on different cores when possible.
CORES=$(nproc)
if command -v taskset >/dev/null && [ "$CORES" -ge 2 ]; then
    PIN_SERVER="taskset -c 0"
    PIN_CLIENT="taskset -c 1"
else
    PIN_SERVER=""
    PIN_CLIENT=""
fi
PY=""
if command -v python3 >/dev/null; then PY=python3; fi
# Realtime variant of the timer-lateness runs: only if chrt can actually
# give a process SCHED_FIFO here.
if ! command -v chrt >/dev/null; then
    LATENESS_RT="no (chrt not found)"
elif chrt -f 50 true 2>/dev/null; then
    LATENESS_RT=yes
else
    LATENESS_RT="no (chrt -f 50 failed as $(id -un): $(chrt -f 50 true 2>&1 | tail -n1 | cut -c1-120))"
fi

# ---------------------------------------------------------------- machine
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "kernel=$(uname -sr)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "cores=$CORES"
    echo "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "rustc=$(rustc --version)"
    [ -n "$PY" ] && echo "python=$($PY --version 2>&1)"
    echo "max_map_count=$(cat /proc/sys/vm/max_map_count 2>/dev/null)"
    echo "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
    echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "clk_tck=$(getconf CLK_TCK)"
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)
    if [ -n "$(git -C "$ROOT" status --porcelain -- src Cargo.toml 2>/dev/null)" ]; then
        commit="$commit (with uncommitted changes in src/ or Cargo.toml)"
    fi
    echo "yieldloop=$commit"
    echo "versions=$(awk '/^name = "(tokio|may|mio|plotters)"$/ {n=$3} /^version/ && n {gsub(/"/,"",n); gsub(/"/,"",$3); printf "%s %s, ", n, $3; n=""}' "$BENCH/Cargo.lock" | sed 's/, $//')"
    echo "pin_server=${PIN_SERVER:-none}"
    echo "pin_client=${PIN_CLIENT:-none}"
    echo "reps=$REPS"
    echo "reps_100k=$REPS_100K"
    echo "reps_1m=$REPS_1M"
    echo "reps_1m_asyncio=$REPS_1M_ASYNCIO"
    echo "echo_reps=$ECHO_REPS"
    echo "echo_secs=$ECHO_SECS"
    echo "echo_warmup=$ECHO_WARMUP"
    echo "handover_reps=$HANDOVER_REPS"
    echo "handover_timeout=$HANDOVER_TIMEOUT"
    echo "lateness_reps=$LATENESS_REPS"
    echo "lateness_tasks=$LATENESS_TASKS"
    echo "lateness_max_ms=$LATENESS_MAX_MS"
    echo "lateness_timeout=$LATENESS_TIMEOUT"
    echo "lateness_rt=$LATENESS_RT"
    echo "build_s=$BUILD_S"
} >"$RES/meta.txt"

cat >"$RES/commands.txt" <<EOF
# build (in bench/, its own crate and target dir)
cargo build --release --bins
# hand-over micro-benchmarks: one process per measurement (a warm-up round,
# then the measured round), killed after ${HANDOVER_TIMEOUT} s
timeout ${HANDOVER_TIMEOUT} bench/target/release/handover --runtime {yieldloop|tokio|may} --bench {pingpong|bounded|mutex|yield|spawn}
# timer lateness: one process per measurement, at normal priority and (the
# "realtime priority" variant, only where chrt works) under SCHED_FIFO 50
timeout ${LATENESS_TIMEOUT} bench/target/release/lateness --runtime {yieldloop|tokio|may} --tasks ${LATENESS_TASKS} --max-ms ${LATENESS_MAX_MS}
timeout ${LATENESS_TIMEOUT} chrt -f 50 bench/target/release/lateness --runtime {yieldloop|tokio|may} --tasks ${LATENESS_TASKS} --max-ms ${LATENESS_MAX_MS}
# sleepers: one process per measurement, killed after ${CELL_TIMEOUT} s
timeout ${CELL_TIMEOUT} bench/target/release/sleepers --runtime {yieldloop|tokio|may|threads} --n N
timeout ${CELL_TIMEOUT} python3 bench/py/sleepers.py --n N
# echo: a fresh server per run; CPU = utime+stime from /proc/SERVER_PID/stat
# (fields 14 and 15), read before the client starts and 0.2 s after it exits
${PIN_SERVER:+$PIN_SERVER }bench/target/release/echo_{yieldloop|tokio|may|mio} --addr 127.0.0.1:PORT &   # PORT below the ephemeral range
${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/loadgen --addr 127.0.0.1:PORT --conns {1|64|512} --size 64 --duration ${ECHO_SECS} --warmup ${ECHO_WARMUP}
EOF

# ---------------------------------------------------------------- hand-over
# One measurement; appends a result line (ok=1, or ok=1 na=1 for a benchmark
# the runtime cannot do) or a failure line (ok=0).
handover_cell() {
    local rt=$1 b=$2 rep=$3 out err rc reason line
    out=$RES/cell.out
    err=$RES/cell.err
    timeout "$HANDOVER_TIMEOUT" "$BIN/handover" --runtime "$rt" --bench "$b" >"$out" 2>"$err"
    rc=$?
    line=$(grep -m1 '^handover ' "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        # rep and ok go first: a trailing reason= runs to the end of the line.
        echo "handover rep=$rep ok=1 ${line#handover }" >>"$RES/handover.txt"
        case $line in *" na=1"*) return 1 ;; esac
        return 0
    fi
    case $rc in
        124) reason="killed after ${HANDOVER_TIMEOUT} s (timeout)" ;;
        137) reason="killed by SIGKILL (out of memory?)" ;;
        *) reason=$(grep -v '^note:' "$err" | grep -v '^ *$' | tail -n 1 | tr -d '\r' | cut -c1-200) ;;
    esac
    [ -n "$reason" ] || reason="exit status $rc"
    cp "$err" "$RES/failed-handover-$rt-$b.err"
    echo "handover runtime=$rt bench=$b rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/handover.txt"
    return 1
}

# Repetitions interleave benchmarks and runtimes; a cell that failed (or
# does not apply) is not run again.
skip=" "
for rep in $(seq 1 "$HANDOVER_REPS"); do
    for b in pingpong bounded mutex yield spawn; do
        log "handover $b run $rep/$HANDOVER_REPS"
        for rt in yieldloop tokio may; do
            case $skip in *" $rt/$b "*) continue ;; esac
            handover_cell "$rt" "$b" "$rep" || skip="$skip$rt/$b "
        done
    done
done
rm -f "$RES/cell.out" "$RES/cell.err"

# ---------------------------------------------------------------- lateness
# One measurement ($2: normal or rt); appends a result line (ok=1) or a
# failure line (ok=0).
lateness_cell() {
    local rt=$1 variant=$2 rep=$3 out err rc reason line prio=()
    out=$RES/cell.out
    err=$RES/cell.err
    [ "$variant" = rt ] && prio=(chrt -f 50)
    timeout "$LATENESS_TIMEOUT" "${prio[@]}" "$BIN/lateness" --runtime "$rt" \
        --tasks "$LATENESS_TASKS" --max-ms "$LATENESS_MAX_MS" >"$out" 2>"$err"
    rc=$?
    line=$(grep -m1 '^lateness ' "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        echo "lateness variant=$variant rep=$rep ok=1 ${line#lateness }" >>"$RES/lateness.txt"
        return 0
    fi
    case $rc in
        124) reason="killed after ${LATENESS_TIMEOUT} s (timeout)" ;;
        137) reason="killed by SIGKILL (out of memory?)" ;;
        *) reason=$(grep -v '^note:' "$err" | grep -v '^ *$' | tail -n 1 | tr -d '\r' | cut -c1-200) ;;
    esac
    [ -n "$reason" ] || reason="exit status $rc"
    cp "$err" "$RES/failed-lateness-$rt-$variant.err"
    echo "lateness runtime=$rt variant=$variant rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/lateness.txt"
    return 1
}

LATENESS_VARIANTS=normal
[ "$LATENESS_RT" = yes ] && LATENESS_VARIANTS="normal rt"
skip=" "
for rep in $(seq 1 "$LATENESS_REPS"); do
    log "lateness run $rep/$LATENESS_REPS ($LATENESS_VARIANTS)"
    for variant in $LATENESS_VARIANTS; do
        for rt in yieldloop tokio may; do
            case $skip in *" $rt/$variant "*) continue ;; esac
            lateness_cell "$rt" "$variant" "$rep" || skip="$skip$rt/$variant "
        done
    done
done
rm -f "$RES/cell.out" "$RES/cell.err"

# ---------------------------------------------------------------- sleepers
# One measurement; appends a result line (ok=1) or a failure line (ok=0).
sleepers_cell() {
    local rt=$1 n=$2 rep=$3 out err rc reason
    out=$RES/cell.out
    err=$RES/cell.err
    if [ "$rt" = asyncio ]; then
        timeout "$CELL_TIMEOUT" "$PY" "$BENCH/py/sleepers.py" --n "$n" >"$out" 2>"$err"
    else
        timeout "$CELL_TIMEOUT" "$BIN/sleepers" --runtime "$rt" --n "$n" >"$out" 2>"$err"
    fi
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^sleepers ' "$out"; then
        echo "$(grep -m1 '^sleepers ' "$out") rep=$rep ok=1" >>"$RES/sleepers.txt"
        return 0
    fi
    case $rc in
        124) reason="killed after ${CELL_TIMEOUT} s (timeout)" ;;
        137) reason="killed by SIGKILL (out of memory?)" ;;
        *) reason=$(grep -v '^note:' "$err" | grep -v '^ *$' | tail -n 1 | tr -d '\r' | cut -c1-200) ;;
    esac
    [ -n "$reason" ] || reason="exit status $rc"
    cp "$err" "$RES/failed-$rt-$n.err"
    echo "sleepers runtime=$rt n=$n rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/sleepers.txt"
    return 1
}

RUNTIMES="yieldloop tokio may threads"
[ -n "$PY" ] && RUNTIMES="$RUNTIMES asyncio"
for n in $SLEEPERS_NS; do
    case $n in
        1000000) reps=$REPS_1M ;;
        100000) reps=$REPS_100K ;;
        *) reps=$REPS ;;
    esac
    failed=" "
    # Repetitions interleave the runtimes, so a burst of outside load
    # does not land on one runtime only.
    for rep in $(seq 1 "$reps"); do
        for rt in $RUNTIMES; do
            # Threads: only up to 10,000 (the article's point is that they
            # hit a ceiling); a failed cell is not repeated.
            if [ "$rt" = threads ] && [ "$n" -gt 10000 ]; then continue; fi
            case $failed in *" $rt "*) continue ;; esac
            if [ "$rt" = asyncio ] && [ "$n" -eq 1000000 ] && [ "$rep" -gt "$REPS_1M_ASYNCIO" ]; then continue; fi
            log "sleepers $rt n=$n run $rep/$reps"
            sleepers_cell "$rt" "$n" "$rep" || failed="$failed$rt "
        done
    done
done
rm -f "$RES/cell.out" "$RES/cell.err"

# ---------------------------------------------------------------- echo
stat_ticks() { # user and system ticks of a process
    sed 's/.*) //' "/proc/$1/stat" | awk '{print $12, $13}'
}

# Server ports are taken below the ephemeral range: a client socket left in
# TIME_WAIT on an ephemeral port would otherwise make the bind fail.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_lo=32768
port=$((eph_lo > 21000 ? 21000 : 1024 + 2000))

# Starts server $1 on a free port (trying a few); sets $spid and $addr.
start_server() {
    local tries
    for tries in 1 2 3 4 5; do
        port=$((port + 1))
        addr=127.0.0.1:$port
        # shellcheck disable=SC2086
        $PIN_SERVER "$BIN/echo_$1" --addr "$addr" 2>"$RES/server.err" &
        spid=$!
        sleep 0.2
        if kill -0 "$spid" 2>/dev/null; then
            return 0
        fi
        wait "$spid" 2>/dev/null
    done
    return 1
}

for rep in $(seq 1 "$ECHO_REPS"); do
    for server in yieldloop tokio may mio; do
        for conns in 1 64 512; do
            if ! start_server "$server"; then
                echo "echo server=$server conns=$conns rep=$rep ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/echo.txt"
                continue
            fi
            log "echo $server conns=$conns run $rep/$ECHO_REPS ($addr)"
            read -r u0 s0 < <(stat_ticks "$spid")
            # shellcheck disable=SC2086
            out=$($PIN_CLIENT "$BIN/loadgen" --addr "$addr" --conns "$conns" --size 64 \
                --duration "$ECHO_SECS" --warmup "$ECHO_WARMUP" 2>"$RES/client.err")
            rc=$?
            sleep 0.2
            read -r u1 s1 < <(stat_ticks "$spid")
            kill "$spid" 2>/dev/null
            wait "$spid" 2>/dev/null
            if [ $rc -eq 0 ] && [ -n "$out" ]; then
                echo "echo server=$server rep=$rep utime=$((u1 - u0)) stime=$((s1 - s0)) ${out#loadgen } ok=1" >>"$RES/echo.txt"
            else
                echo "echo server=$server conns=$conns rep=$rep ok=0 reason=loadgen exit $rc: $(tail -n1 "$RES/client.err")" >>"$RES/echo.txt"
            fi
        done
    done
done
rm -f "$RES/server.err" "$RES/client.err"

# ---------------------------------------------------------------- report
{
    echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "total_s=$(elapsed)"
} >>"$RES/meta.txt"
log "writing docs/benchmarks.md and docs/img/sleepers.svg"
"$BIN/report" --results "$RES" --md "$ROOT/docs/benchmarks.md" --svg "$ROOT/docs/img/sleepers.svg"
log "done"

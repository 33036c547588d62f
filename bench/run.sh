#!/usr/bin/env bash
# Builds the comparison benchmarks and yieldloop's echo_server and echo_load
# examples (release), measures what the first touch of memory costs on this
# machine, runs the benchmarks (hand-over micro-benchmarks, timer lateness,
# sleepers, echo servers, HTTP servers, thread-per-core scaling, the Redis-backed
# example service, database round trips, a ticker beside database waits,
# blocking clients under feature `hook`, fan-outs over two workers, the task
# dump, fairness beside a task that never runs dry, the recovery of Redis
# clients from a server restart, HTTP servers under attacks held open),
# and writes docs/benchmarks.md
# and docs/src/img/sleepers.svg from the raw results in bench/results/.
#
# Go, the stackful peer, is built from bench/go (standard library only) with
# `go build` when the go tool is installed (`apt-get install golang-go`) and
# runs the sleepers, echo and hand-over workloads with GOMAXPROCS=1 (the
# fairness servers with 1 and with 2); without go it is skipped and the
# report says so. The "stackful floor"
# (bench/src/bin/sleepers_floor.rs, bare coroutines on guarded stacks, no
# runtime) runs the sleepers workload beside the others.
#
#   bench/run.sh
#
# Knobs (environment variables, defaults in brackets):
#   REPS [5]        runs per sleepers cell for N <= 10,000
#   REPS_100K [3]   runs per sleepers cell for N = 100,000
#   REPS_1M [3]     runs per sleepers cell for N = 1,000,000
#   REPS_1M_ASYNCIO [1]  the same for asyncio, which takes 40-90 s per run there
#   ECHO_REPS [5]   runs per echo cell
#   ECHO_SECS [3]   measured seconds per echo run (after ECHO_WARMUP [0.5])
#   CELL_TIMEOUT [180]  seconds before a sleepers run is killed and marked failed
#   SLEEPERS_NS ["1 1000 10000 100000 1000000"]  task counts (for quick trials)
#   WARMUP [1]      1: a discarded run of each runtime before the sleepers
#                   cells of N >= 100,000 (asyncio only up to 100,000); 0: none
#   PRETOUCH [1]    1: before each sleepers run at N >= 100,000, touch and free
#                   as much memory as the hungriest warm-up run held (needs
#                   WARMUP=1), so the run gets memory the host backs; 0: none
#   FIRSTTOUCH_MAX_MB [12288]  most MiB the first-touch measurement touches
#                   looking for cold memory (and at most half of MemAvailable)
#   FIRSTTOUCH_SETTLE [5]  seconds it waits before that
#   HANDOVER_REPS [5]      runs per hand-over cell
#   FANOUT_REPS [3]        runs per fan-out cell (broadcast, skewed; two workers)
#   FANOUT_VALUES [100000] values the broadcast fan-out sends
#   FANOUT_RECEIVERS [1000] receivers of the broadcast fan-out
#   FANOUT_TASKS [10000]   tasks of the skewed fan-out
#   FANOUT_TIMEOUT [120]   seconds before a fan-out run is killed and marked failed
#   HANDOVER_TIMEOUT [60]  seconds before a hand-over run is killed and marked failed
#   LATENESS_REPS [5]      runs per timer-lateness cell (per runtime and variant)
#   LATENESS_TASKS [1000]  sleeping tasks per timer-lateness run
#   LATENESS_MAX_MS [50]   largest random delay (ms) of a timer-lateness task
#   LATENESS_TIMEOUT [30]  seconds before a timer-lateness run is killed and marked failed
#   HTTP_REPS [3]   runs per HTTP cell (server x keep-alive connections)
#   HTTP_SECS [3]   measured seconds per HTTP run (whole seconds: wrk takes no
#                   fractions); the client is killed after HTTP_SECS + 30 s
#   HTTP_WARMUP [0.5]  seconds of untimed load before HTTP_SECS (http_load only)
#   HTTP_LOADGEN [auto]  the HTTP load generator: wrk, http_load (ours), or
#                   auto = wrk when it is on the PATH, else http_load
#   HTTP2_REPS [5]  runs per server of the http2 stage (the two in turn)
#   HTTP2_N [300000]  requests per measured h2load run (after a discarded
#                   warm-up run of HTTP2_WARMUP_N [30000] on the same server)
#   HTTP2_CONNS [4], HTTP2_STREAMS [16]  h2load's connections and concurrent
#                   streams per connection (-c, -m): 64 streams in flight
#   HTTP2_TIMEOUT [120]  seconds before an h2load run is killed and the run
#                   marked failed (the stage needs h2load: apt-get install
#                   nghttp2-client, else it is skipped)
#   SCALE_REPS [5]  runs per thread-per-core scaling cell (client threads x workers)
#   SCALE_SECS [4]  measured seconds per scaling run (the client is killed and the
#                   run marked failed after SCALE_SECS + 30 s)
#   DB_REPS [5]     runs per ticker cell of the db stage
#   DB_RT_REPS [15] runs per round-trip cell of the db stage (each takes about a
#                   second; where the kernel puts the client relative to the server
#                   moves a run's figures, so the medians need more runs)
#   DB_N [10000]    measured queries per round-trip run (after DB_WARMUP [1000])
#   DB_TASKS [50]   tasks waiting on the database per ticker run
#   DB_WAIT_MS [200]  how long each of them waits (BLPOP timeout, pg_sleep)
#   DB_TIMEOUT [120]  seconds before a database run is killed and marked failed
#   DB_PAIRS [120]  pairs of batches in the interleaved comparisons (the native
#                   route with tokio's own client, on_tokio with tokio_hop:
#                   db_roundtrip --vs), per placement
#   DB_BATCH [300]  queries per batch of those comparisons
#   DB_TOKIO_WORKERS [""]  worker threads of on_tokio's shared runtime in the
#                   db stage's on_tokio route (and of tokio_hop's second
#                   runtime); empty: its default, one
#   SERVICE_REPS [11] runs per service cell (the example service's Redis endpoint:
#                   yieldloop multiplexed, tokio, yieldloop with a pool, yieldloop
#                   on the redis crate's sync client under hook), HTTP_SECS measured seconds each, with
#                   the HTTP stage's load generator; needs redis-server
#                   (apt-get install redis-server), else the stage is skipped
#   HOOK_REPS [3]   runs per cell of the hook stage (each build or mode in turn)
#   HOOK_ITERS [100000]  calls per timed batch of hook_cost
#   HOOK_BATCHES [31]  timed batches per call and way in a hook_cost run
#   HOOK_N [10000]  tasks, each with a connection, per hook_conns run
#   HOOK_ROUNDS [20]  round trips per task in a hook_conns run
#   HOOK_TIMEOUT [300]  seconds before a hook-stage run is killed and marked failed
#   DIAG_REPS [3]   runs per task-dump cell (diag stage)
#   DIAG_NS ["10000 100000"]  paused tasks per task-dump run
#   DIAG_BASE [eb90bd2]  the revision without the task dump and the
#                   counters, built from `git archive` into target/base (in a
#                   target dir shared with FAIR_BASE's, target/revs), whose
#                   hand-over and echo figures the diag stage compares with
#                   today's in alternating runs (skipped, with a note, when
#                   the checkout does not have it)
#   DIAG_AB_REPS [9]  alternating pairs per hand-over benchmark (diag stage)
#   DIAG_ECHO_REPS [5]  alternating pairs of echo runs (diag stage)
#   DIAG_TIMEOUT [300]  seconds before a diag-stage run is killed and marked failed
#                   (the hook stage, the service stage's `yieldloop-hook` server
#                   and the recovery stage's hook_pooled route
#                   run binaries built a second time, with feature `hook`, into
#                   bench/target/hook; if that build fails they are skipped)
#   FAIR_REPS [3]   runs per fairness cell (runtime x flood: a task consuming a
#                   never-ending input beside an echo task answering a ping
#                   every 5 ms; see bench/src/bin/fairness_client.rs)
#   FAIR_SECS [2]   seconds of pings per fairness run
#   FAIR_TIMEOUT [30]  seconds before a fairness client is killed and the run
#                   marked failed
#   FAIR_BASE [6e8ff4a]  the revision before the per-task budget, built from
#                   `git archive` like DIAG_BASE, whose hand-over, echo and
#                   HTTP figures the fairness stage compares with today's in
#                   alternating runs (skipped, with a note, when the checkout
#                   does not have it)
#   FAIR_AB_REPS [9]  alternating pairs per benchmark of that comparison
#   RECOVERY_REPS [3]  runs per route of the recovery stage (Redis clients under
#                   load while redis-server is killed with SIGKILL and restarted
#                   on the same port; needs redis-server, else the stage is skipped)
#   RECOVERY_SECS [5]  seconds of load per recovery run
#   RECOVERY_KILL_AT [1.5]  seconds into the load when the server is killed
#   RECOVERY_DOWN [1]  seconds the server stays down
#   RECOVERY_TASKS [50]  tasks sending commands in a recovery run
#   ATTACK_REPS [5]  runs per cell of the attack stage (server x attack, the
#                   attacks in turn; "none" is the normal client alone)
#   ATTACK_CONNS [1000]  attacking connections of the large-body and idle attacks
#   ATTACK_PIPE_CONNS [200]  attacking connections of the pipelining attack
#   ATTACK_PIPE_BYTES [8192]  bytes of pipelined GET /page (4 KiB answers) each
#                   of them sends, never reading an answer
#   ATTACK_PIPE_RCVBUF [4096]  SO_RCVBUF of a pipelining attacker's sockets (so
#                   that its answers pile up in the server, not in the kernel)
#   ATTACK_SETTLE [2]  seconds between the last attacker connecting and the
#                   server's memory being read
#   ATTACK_SECS [3] seconds of the normal client (whole seconds, for wrk) per run
#   ATTACK_CLIENT_CONNS [64]  keep-alive connections of the normal client
#   STAGES ["handover xmutex lateness sleepers echo syscalls http http2 scaling service db hook fanout diag fairness recovery attack"]  the stages
#                   to run (for trials: the report marks the others not run)
#   RUNTIMES [all]  the runtimes to run in the sleepers, hand-over, lateness,
#                   echo, syscalls and fairness stages, e.g. "yieldloop floor go";
#                   names: yieldloop tokio may mio go threads floor asyncio (and
#                   yieldloop-rr, the fan-out stage's round-robin placement;
#                   tokio-mt and go-mt, the fairness stage's two workers)
#   OUT_MD [docs/benchmarks.md]  where the report goes (relative to the root)
#   OUT_SVG [docs/src/img/sleepers.svg]  where the sleepers plot goes
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
REPS_1M=${REPS_1M:-3}
REPS_1M_ASYNCIO=${REPS_1M_ASYNCIO:-1}
ECHO_REPS=${ECHO_REPS:-5}
ECHO_SECS=${ECHO_SECS:-3}
ECHO_WARMUP=${ECHO_WARMUP:-0.5}
CELL_TIMEOUT=${CELL_TIMEOUT:-180}
SLEEPERS_NS=${SLEEPERS_NS:-1 1000 10000 100000 1000000}
WARMUP=${WARMUP:-1}
PRETOUCH=${PRETOUCH:-1}
FIRSTTOUCH_MAX_MB=${FIRSTTOUCH_MAX_MB:-12288}
FIRSTTOUCH_SETTLE=${FIRSTTOUCH_SETTLE:-5}
HANDOVER_REPS=${HANDOVER_REPS:-5}
HANDOVER_TIMEOUT=${HANDOVER_TIMEOUT:-60}
LATENESS_REPS=${LATENESS_REPS:-5}
LATENESS_TASKS=${LATENESS_TASKS:-1000}
LATENESS_MAX_MS=${LATENESS_MAX_MS:-50}
LATENESS_TIMEOUT=${LATENESS_TIMEOUT:-30}
HTTP_REPS=${HTTP_REPS:-3}
HTTP_SECS=${HTTP_SECS:-3}
HTTP_WARMUP=${HTTP_WARMUP:-0.5}
HTTP_LOADGEN=${HTTP_LOADGEN:-auto}
HTTP2_REPS=${HTTP2_REPS:-5}
HTTP2_N=${HTTP2_N:-300000}
HTTP2_WARMUP_N=${HTTP2_WARMUP_N:-30000}
HTTP2_CONNS=${HTTP2_CONNS:-4}
HTTP2_STREAMS=${HTTP2_STREAMS:-16}
HTTP2_TIMEOUT=${HTTP2_TIMEOUT:-120}
SCALE_REPS=${SCALE_REPS:-5}
SCALE_SECS=${SCALE_SECS:-4}
DB_REPS=${DB_REPS:-5}
DB_RT_REPS=${DB_RT_REPS:-15}
DB_N=${DB_N:-10000}
DB_WARMUP=${DB_WARMUP:-1000}
DB_TASKS=${DB_TASKS:-50}
DB_WAIT_MS=${DB_WAIT_MS:-200}
DB_TIMEOUT=${DB_TIMEOUT:-120}
DB_TOKIO_WORKERS=${DB_TOKIO_WORKERS:-}
DB_PAIRS=${DB_PAIRS:-120}
DB_BATCH=${DB_BATCH:-300}
SERVICE_REPS=${SERVICE_REPS:-11}
HOOK_REPS=${HOOK_REPS:-3}
HOOK_ITERS=${HOOK_ITERS:-100000}
HOOK_BATCHES=${HOOK_BATCHES:-31}
HOOK_N=${HOOK_N:-10000}
HOOK_ROUNDS=${HOOK_ROUNDS:-20}
HOOK_TIMEOUT=${HOOK_TIMEOUT:-300}
DIAG_REPS=${DIAG_REPS:-3}
DIAG_NS=${DIAG_NS:-10000 100000}
DIAG_BASE=${DIAG_BASE:-eb90bd2}
DIAG_AB_REPS=${DIAG_AB_REPS:-9}
DIAG_ECHO_REPS=${DIAG_ECHO_REPS:-5}
DIAG_TIMEOUT=${DIAG_TIMEOUT:-300}
FAIR_REPS=${FAIR_REPS:-3}
FAIR_SECS=${FAIR_SECS:-2}
FAIR_TIMEOUT=${FAIR_TIMEOUT:-30}
FAIR_BASE=${FAIR_BASE:-6e8ff4a}
FAIR_AB_REPS=${FAIR_AB_REPS:-9}
RECOVERY_REPS=${RECOVERY_REPS:-3}
RECOVERY_SECS=${RECOVERY_SECS:-5}
RECOVERY_KILL_AT=${RECOVERY_KILL_AT:-1.5}
RECOVERY_DOWN=${RECOVERY_DOWN:-1}
RECOVERY_TASKS=${RECOVERY_TASKS:-50}
ATTACK_REPS=${ATTACK_REPS:-5}
ATTACK_CONNS=${ATTACK_CONNS:-1000}
ATTACK_PIPE_CONNS=${ATTACK_PIPE_CONNS:-200}
ATTACK_PIPE_BYTES=${ATTACK_PIPE_BYTES:-8192}
ATTACK_PIPE_RCVBUF=${ATTACK_PIPE_RCVBUF:-4096}
ATTACK_SETTLE=${ATTACK_SETTLE:-2}
ATTACK_SECS=${ATTACK_SECS:-3}
ATTACK_CLIENT_CONNS=${ATTACK_CLIENT_CONNS:-64}
STAGES=${STAGES:-handover xmutex lateness sleepers echo syscalls http http2 scaling service db hook fanout diag fairness recovery attack}
FANOUT_REPS=${FANOUT_REPS:-3}
FANOUT_VALUES=${FANOUT_VALUES:-100000}
FANOUT_RECEIVERS=${FANOUT_RECEIVERS:-1000}
FANOUT_TASKS=${FANOUT_TASKS:-10000}
FANOUT_TIMEOUT=${FANOUT_TIMEOUT:-120}
RUNTIMES=${RUNTIMES:-all}
OUT_MD=${OUT_MD:-docs/benchmarks.md}
OUT_SVG=${OUT_SVG:-docs/src/img/sleepers.svg}

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
RES=$BENCH/results
BIN=$BENCH/target/release
# The binaries built with feature `hook` (a target dir of their own, so
# that the plain ones stay plain).
HBIN=$BENCH/target/hook/release
EX=$ROOT/target/release/examples
START=$(date +%s.%N)
export RUST_BACKTRACE=0

# Whether stage $1 is in STAGES.
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
# The runtimes of the list "$@" that RUNTIMES selects, in the list's order.
pick() {
    local rt out=""
    for rt in "$@"; do
        case " $RUNTIMES " in " all " | *" $rt "*) out="$out $rt" ;; esac
    done
    echo "$out"
}
# The list "$@" after run number $1 as it is for that run: in its order on
# odd runs, in the opposite one on even runs, so that across the runs no
# entry always follows the same neighbour.
in_turn() {
    local r=$1 x out=""
    shift
    if [ $((r % 2)) = 1 ]; then
        out="$*"
    else
        for x in "$@"; do out="$x $out"; done
    fi
    echo "$out"
}
elapsed() { awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
log() { printf '[%6ss] %s\n' "$(elapsed)" "$*" >&2; }
# Why a benchmark process failed: exit status $1, its stderr in file $2, the
# timeout it ran under $3 (s); "$4", if given, a pattern of stderr lines to
# pass over (besides notes and blank lines).
failure_reason() {
    local reason
    case $1 in
        124) reason="killed after $3 s (timeout)" ;;
        137) reason="killed by SIGKILL (out of memory?)" ;;
        *) reason=$(grep -v '^note:' "$2" | grep -v "${4:-^ *$}" | grep -v '^ *$' | tail -n 1 | tr -d '\r' | cut -c1-200) ;;
    esac
    echo "${reason:-exit status $1}"
}

cd "$BENCH" || exit 1
log "building (release)"
if ! cargo build --release --quiet --bins; then
    echo "run.sh: build failed" >&2
    exit 1
fi
# The hand-over benchmark once more with yieldloop's `tracing` feature on
# (and no subscriber), in a target dir of its own: what the feature costs.
if want handover && ! CARGO_TARGET_DIR=$BENCH/target/tracing cargo build --release --quiet \
    --features tracing --bin handover; then
    echo "run.sh: build of handover with the tracing feature failed" >&2
    exit 1
fi
# yieldloop's own echo server and load client, for the scaling stage (built
# in the main crate, so they land in its target dir).
if want scaling && ! (cd "$ROOT" && cargo build --release --quiet --example echo_server --example echo_load); then
    echo "run.sh: build of the echo_server and echo_load examples failed" >&2
    exit 1
fi
# The same crate with feature `hook`, for the hook stage and the service
# stage's yieldloop-hook server; a failed build skips just those.
HOOK_BUILD=no
if want hook || want service || want recovery; then
    if cargo build --release --quiet --features hook --target-dir "$BENCH/target/hook" \
        --bin service_hook --bin hook_cost --bin hook_conns --bin redis_recovery \
        2>"$BENCH/target/hook-build.err"; then
        HOOK_BUILD=yes
    else
        HOOK_BUILD="no (the build with --features hook failed: $(grep -m1 '^error' "$BENCH/target/hook-build.err" | cut -c1-160))"
        log "note: $HOOK_BUILD"
    fi
fi

# An older revision of the library, for a before/after comparison: the
# source of revision $1 from git, in target/$2/src, and its bench binaries
# "${@:3}" built from it and copied to target/$2/release. Every such build
# shares one target dir (target/revs), so that the dependencies the
# revisions have in common are built once. Prints "yes", or "no (why)";
# without git or the revision, the comparison is skipped.
build_rev() {
    local rev=$1 name=$2 src=$BENCH/target/$2/src err=$BENCH/target/$2-build.err b bins=()
    shift 2
    for b in "$@"; do bins+=(--bin "$b"); done
    rm -rf "$src"
    mkdir -p "$src" "$BENCH/target/$name/release"
    if ! git -C "$ROOT" archive "$rev" 2>"$err" | tar -x -C "$src" 2>>"$err"; then
        echo "no (git archive $rev failed: $(grep -m1 . "$err" | cut -c1-160))"
    elif ! (cd "$src/bench" && CARGO_TARGET_DIR=$BENCH/target/revs cargo build --release --quiet \
        "${bins[@]}") 2>>"$err"; then
        echo "no (the build of $rev failed: $(grep -m1 '^error' "$err" | cut -c1-160))"
    else
        for b in "$@"; do
            cp "$BENCH/target/revs/release/$b" "$BENCH/target/$name/release/$b" 2>>"$err" ||
                { echo "no (copying $b of $rev failed)"; return; }
        done
        echo yes
    fi
}

# The revision before the task dump and the counters, for the diag stage.
BASE_BUILD=no
if want diag; then
    BASE_BUILD=$(build_rev "$DIAG_BASE" base handover echo_yieldloop)
    [ "$BASE_BUILD" = yes ] || log "note: diag stage's base build: $BASE_BUILD"
fi
# The revision before the per-task budget, for the fairness stage.
FAIR_BUILD=no
if want fairness; then
    FAIR_BUILD=$(build_rev "$FAIR_BASE" fairbase handover echo_yieldloop http_yieldloop)
    [ "$FAIR_BUILD" = yes ] || log "note: fairness stage's base build: $FAIR_BUILD"
fi

# ---------------------------------------------------------------- go and the floor
# Go is optional: without the go tool (or if its build fails) GO_VERSION says
# why, the Go cells are skipped, and the report marks them "not measured".
GO_BIN=$BENCH/target/go/gobench
GO_RUNS=""
if ! command -v go >/dev/null; then
    GO_VERSION="missing (go not found)"
    log "note: go not found, so Go is not measured (apt-get install golang-go)"
elif (cd "$BENCH/go" && GOPROXY=off GOFLAGS= go build -o "$GO_BIN" .); then
    GO_VERSION=$(go version | sed 's/^go version //')
    GO_RUNS=go
else
    GO_VERSION="missing (go build in bench/go failed)"
    log "note: go build in bench/go failed, so Go is not measured"
fi

# The command line of runtime $1's program for stage $2 (sleepers, handover,
# echo, fairness, ...), into the array CMD; the stage's own arguments follow
# it. Runtime base (fairbase) is yieldloop at DIAG_BASE (FAIR_BASE).
bench_cmd() {
    case $2/$1 in
        sleepers/asyncio) CMD=("$PY" "$BENCH/py/sleepers.py") ;;
        sleepers/floor) CMD=("$BIN/sleepers_floor") ;;
        xmutex/go) CMD=(env GOMAXPROCS=2 "$GO_BIN" xmutex) ;;
        # The fan-outs measure two workers: two Ps.
        fanout/go) CMD=(env GOMAXPROCS=2 "$GO_BIN" fanout) ;;
        fairness/go-mt) CMD=(env GOMAXPROCS=2 "$GO_BIN" fairness) ;;
        */go) CMD=(env GOMAXPROCS=1 "$GO_BIN" "$2") ;;
        fanout/*) CMD=("$BIN/fanout" --runtime "$1") ;;
        sleepers/*) CMD=("$BIN/sleepers" --runtime "$1") ;;
        handover/yieldloop-tracing)
            CMD=("$BENCH/target/tracing/release/handover" --runtime yieldloop --label yieldloop-tracing) ;;
        handover/base | handover/fairbase) CMD=("$BENCH/target/$1/release/handover" --runtime yieldloop) ;;
        handover/*) CMD=("$BIN/handover" --runtime "$1") ;;
        xmutex/*) CMD=("$BIN/xmutex" --runtime "$1") ;;
        echo/base | echo/fairbase) CMD=("$BENCH/target/$1/release/echo_yieldloop") ;;
        echo/*) CMD=("$BIN/echo_$1") ;;
        fairness/*) CMD=("$BIN/fairness" --runtime "$1") ;;
    esac
}
BUILD_S=$(elapsed)

case $OUT_MD in /*) ;; *) OUT_MD=$ROOT/$OUT_MD ;; esac
case $OUT_SVG in /*) ;; *) OUT_SVG=$ROOT/$OUT_SVG ;; esac
mkdir -p "$RES" "$(dirname "$OUT_MD")" "$(dirname "$OUT_SVG")"
rm -f "$RES"/firsttouch.txt "$RES"/firsttouch.err "$RES"/sleepers-warmup.txt "$RES"/pretouch.err "$RES"/syscalls.txt "$RES"/handover.txt "$RES"/lateness.txt "$RES"/sleepers.txt "$RES"/echo.txt "$RES"/http.txt "$RES"/service.txt "$RES"/scaling.txt "$RES"/db.txt "$RES"/hook.txt "$RES"/xmutex.txt "$RES"/fanout.txt "$RES"/diag.txt "$RES"/fairness.txt "$RES"/recovery.txt "$RES"/attack.txt "$RES"/meta.txt "$RES"/commands.txt "$RES"/*.err

# Pinning: server and client on different cores when possible.
CORES=$(nproc)
if command -v taskset >/dev/null && [ "$CORES" -ge 2 ]; then
    PIN_SERVER="taskset -c 0"
    PIN_CLIENT="taskset -c 1"
else
    PIN_SERVER=""
    PIN_CLIENT=""
fi
HTTP_TIMEOUT=$(awk -v s="$HTTP_SECS" -v w="$HTTP_WARMUP" 'BEGIN { printf "%d", s + w + 30.999 }')
# The HTTP load generator; "none (...)" skips the HTTP stage.
case $HTTP_LOADGEN in
    auto) if command -v wrk >/dev/null; then HTTP_LOAD=wrk; else HTTP_LOAD=http_load; fi ;;
    wrk) if command -v wrk >/dev/null; then HTTP_LOAD=wrk; else HTTP_LOAD="none (HTTP_LOADGEN=wrk but wrk is not installed)"; fi ;;
    http_load) HTTP_LOAD=http_load ;;
    *) HTTP_LOAD="none (unknown HTTP_LOADGEN=$HTTP_LOADGEN)" ;;
esac
case $HTTP_SECS in
    *[!0-9]* | "") [ "$HTTP_LOAD" = wrk ] && HTTP_LOAD="none (wrk needs whole seconds, HTTP_SECS=$HTTP_SECS)" ;;
esac
case $HTTP_LOAD in
    wrk) HTTP_LOAD_VERSION=$(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2) ;;
    http_load) HTTP_LOAD_VERSION="http_load (bench/src/bin/http_load.rs)" ;;
    *) HTTP_LOAD_VERSION=$HTTP_LOAD ;;
esac
SCALE_TIMEOUT=$(awk -v s="$SCALE_SECS" 'BEGIN { printf "%d", s + 30.999 }')
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
    echo "versions=$(awk '/^name = "(tokio|may|mio|hyper|plotters|redis)"$/ {n=$3} /^version/ && n {gsub(/"/,"",n); gsub(/"/,"",$3); printf "%s %s, ", n, $3; n=""}' "$BENCH/Cargo.lock" | sed 's/, $//')"
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
    echo "fanout_reps=$FANOUT_REPS"
    echo "fanout_values=$FANOUT_VALUES"
    echo "fanout_receivers=$FANOUT_RECEIVERS"
    echo "fanout_tasks=$FANOUT_TASKS"
    echo "fanout_timeout=$FANOUT_TIMEOUT"
    echo "diag_reps=$DIAG_REPS"
    echo "diag_ns=$DIAG_NS"
    echo "diag_base=$DIAG_BASE"
    echo "diag_base_build=$BASE_BUILD"
    echo "diag_ab_reps=$DIAG_AB_REPS"
    echo "diag_echo_reps=$DIAG_ECHO_REPS"
    echo "diag_timeout=$DIAG_TIMEOUT"
    echo "fair_reps=$FAIR_REPS"
    echo "fair_secs=$FAIR_SECS"
    echo "fair_timeout=$FAIR_TIMEOUT"
    echo "fair_base=$FAIR_BASE"
    echo "fair_base_build=$FAIR_BUILD"
    echo "fair_ab_reps=$FAIR_AB_REPS"
    echo "http_reps=$HTTP_REPS"
    echo "http_secs=$HTTP_SECS"
    echo "http_warmup=$HTTP_WARMUP"
    echo "http_load=$HTTP_LOAD"
    echo "http_load_version=$HTTP_LOAD_VERSION"
    echo "scale_reps=$SCALE_REPS"
    echo "service_reps=$SERVICE_REPS"
    echo "redis_version=$(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
    echo "scale_secs=$SCALE_SECS"
    echo "db_reps=$DB_REPS"
    echo "db_rt_reps=$DB_RT_REPS"
    echo "db_n=$DB_N"
    echo "db_warmup=$DB_WARMUP"
    echo "db_tasks=$DB_TASKS"
    echo "db_wait_ms=$DB_WAIT_MS"
    echo "db_timeout=$DB_TIMEOUT"
    echo "db_tokio_workers=${DB_TOKIO_WORKERS:-default}"
    echo "db_pairs=$DB_PAIRS"
    echo "db_batch=$DB_BATCH"
    echo "hook_build=$HOOK_BUILD"
    echo "hook_reps=$HOOK_REPS"
    echo "hook_iters=$HOOK_ITERS"
    echo "hook_batches=$HOOK_BATCHES"
    echo "hook_n=$HOOK_N"
    echo "hook_rounds=$HOOK_ROUNDS"
    echo "hook_timeout=$HOOK_TIMEOUT"
    echo "build_s=$BUILD_S"
    echo "go=$GO_VERSION"
    echo "sleepers_ns=$SLEEPERS_NS"
    echo "cell_timeout=$CELL_TIMEOUT"
    echo "warmup=$WARMUP"
    echo "pretouch=$PRETOUCH"
    echo "firsttouch_max_mb=$FIRSTTOUCH_MAX_MB"
    echo "firsttouch_settle=$FIRSTTOUCH_SETTLE"
    echo "recovery_reps=$RECOVERY_REPS"
    echo "recovery_secs=$RECOVERY_SECS"
    echo "recovery_kill_at=$RECOVERY_KILL_AT"
    echo "recovery_down=$RECOVERY_DOWN"
    echo "recovery_tasks=$RECOVERY_TASKS"
    echo "attack_reps=$ATTACK_REPS"
    echo "attack_conns=$ATTACK_CONNS"
    echo "attack_pipe_conns=$ATTACK_PIPE_CONNS"
    echo "attack_pipe_bytes=$ATTACK_PIPE_BYTES"
    echo "attack_pipe_rcvbuf=$ATTACK_PIPE_RCVBUF"
    echo "attack_settle=$ATTACK_SETTLE"
    echo "attack_secs=$ATTACK_SECS"
    echo "attack_client_conns=$ATTACK_CLIENT_CONNS"
    echo "stages=$STAGES"
    echo "runtimes=$RUNTIMES"
} >"$RES/meta.txt"

cat >"$RES/commands.txt" <<EOF
# build (in bench/, its own crate and target dir)
cargo build --release --bins
# build yieldloop's echo_server and echo_load examples (in the repository root)
cargo build --release --example echo_server --example echo_load
# hand-over micro-benchmarks: one process per measurement (a warm-up round,
# then the measured round), killed after ${HANDOVER_TIMEOUT} s
timeout ${HANDOVER_TIMEOUT} bench/target/release/handover --runtime {yieldloop|tokio|may} --bench {pingpong|bounded|mutex|yield|spawn|scope|blockon}
# yieldloop with feature tracing (no subscriber), built apart:
# (cd bench && CARGO_TARGET_DIR=target/tracing cargo build --release --features tracing --bin handover)
timeout ${HANDOVER_TIMEOUT} bench/target/tracing/release/handover --runtime yieldloop --label yieldloop-tracing --bench {yield|spawn}
# mutex between two worker threads, contended and not: the same way
timeout ${HANDOVER_TIMEOUT} bench/target/release/xmutex --runtime {yieldloop|tokio} --bench {contended|uncontended|uncontended_local}
# timer lateness: one process per measurement, at normal priority and (the
# "realtime priority" variant, only where chrt works) under SCHED_FIFO 50
timeout ${LATENESS_TIMEOUT} bench/target/release/lateness --runtime {yieldloop|tokio|may} --tasks ${LATENESS_TASKS} --max-ms ${LATENESS_MAX_MS}
timeout ${LATENESS_TIMEOUT} chrt -f 50 bench/target/release/lateness --runtime {yieldloop|tokio|may} --tasks ${LATENESS_TASKS} --max-ms ${LATENESS_MAX_MS}
# first touch of anonymous memory, at the start and again before the sleepers:
# warm (a GiB just freed), then cold (past the memory still backed)
bench/target/release/firsttouch --max-mb ${FIRSTTOUCH_MAX_MB} --settle ${FIRSTTOUCH_SETTLE}
# sleepers: one process per measurement, killed after ${CELL_TIMEOUT} s, its
# CPU time and page faults taken by rusage (wait4); at N >= 100,000 a
# discarded warm-up run of each runtime first, and a pre-touch of as much
# memory as the hungriest warm-up run held (MB) just before every run
bench/target/release/firsttouch --pretouch --mb MB
bench/target/release/rusage -o FILE -- timeout ${CELL_TIMEOUT} bench/target/release/sleepers --runtime {yieldloop|tokio|may|threads} --n N
bench/target/release/rusage -o FILE -- timeout ${CELL_TIMEOUT} python3 bench/py/sleepers.py --n N
# echo: a fresh server per run; CPU = the sum of /proc/SERVER_PID/task/*/schedstat
# (first field, ns) and utime/stime from /proc/SERVER_PID/stat (fields 14 and
# 15, for the user share), read before the client starts and 0.2 s after it exits
${PIN_SERVER:+$PIN_SERVER }bench/target/release/echo_{yieldloop|tokio|may|mio} --addr 127.0.0.1:PORT &   # PORT below the ephemeral range
${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/loadgen --addr 127.0.0.1:PORT --conns {1|64|512} --size 64 --duration ${ECHO_SECS} --warmup ${ECHO_WARMUP}
# HTTP: a fresh server per run (yieldloop runs the http_server recipe's
# connection code; hyper 1.x on tokio current_thread; hyper 1.x on yieldloop,
# the hyper recipe), CPU as for echo
${PIN_SERVER:+$PIN_SERVER }bench/target/release/http_{yieldloop|hyper|hyper_yieldloop} --addr 127.0.0.1:PORT &
EOF
if [ "$HTTP_LOAD" = wrk ]; then
    echo "${PIN_CLIENT:+$PIN_CLIENT }wrk -t1 -c {64|256} -d ${HTTP_SECS}s --latency http://127.0.0.1:PORT/" >>"$RES/commands.txt"
else
    echo "${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_load --addr 127.0.0.1:PORT --conns {64|256} --duration ${HTTP_SECS} --warmup ${HTTP_WARMUP}" >>"$RES/commands.txt"
fi
cat >>"$RES/commands.txt" <<EOF
# HTTP/2 (h2c, prior knowledge): a fresh server per run (hyper-util's auto
# server on tokio current_thread, or on yieldloop by
# yieldloop_http::with_hyper::serve_auto), a discarded warm-up run, then the
# measured one; CPU as for echo, read around the measured run
${PIN_SERVER:+$PIN_SERVER }bench/target/release/http2_{hyper|hyper_yieldloop} --addr 127.0.0.1:PORT &
timeout ${HTTP2_TIMEOUT} ${PIN_CLIENT:+$PIN_CLIENT }h2load -c ${HTTP2_CONNS} -m ${HTTP2_STREAMS} -n ${HTTP2_WARMUP_N} http://127.0.0.1:PORT/   # warm-up
timeout ${HTTP2_TIMEOUT} ${PIN_CLIENT:+$PIN_CLIENT }h2load -c ${HTTP2_CONNS} -m ${HTTP2_STREAMS} -n ${HTTP2_N} http://127.0.0.1:PORT/
EOF
cat >>"$RES/commands.txt" <<EOF
# the example service's Redis endpoint (GET /hits/bench, one Redis GET per
# request) on one thread: yieldloop_recipes::service on one worker with one
# multiplexed Redis connection (or, with --pool, a pool of up to 64), or hyper on
# tokio current_thread with redis's MultiplexedConnection; one redis-server for
# the stage (pinned with the client), a fresh service per run, CPU of the
# service and of Redis as for HTTP
${PIN_CLIENT:+$PIN_CLIENT }redis-server --port RPORT --bind 127.0.0.1 --save '' --appendonly no &
${PIN_SERVER:+$PIN_SERVER }bench/target/release/service_{yieldloop|tokio} --addr 127.0.0.1:PORT --redis 127.0.0.1:RPORT &
${PIN_SERVER:+$PIN_SERVER }bench/target/release/service_yieldloop --pool --addr 127.0.0.1:PORT --redis 127.0.0.1:RPORT &
# the same service on the redis crate's own sync client, under feature hook
(cd bench && cargo build --release --features hook --target-dir target/hook --bin service_hook --bin hook_cost --bin hook_conns --bin redis_recovery)
${PIN_SERVER:+$PIN_SERVER }bench/target/hook/release/service_hook --addr 127.0.0.1:PORT --redis 127.0.0.1:RPORT &
EOF
if [ "$HTTP_LOAD" = wrk ]; then
    echo "${PIN_CLIENT:+$PIN_CLIENT }wrk -t1 -c 64 -d ${HTTP_SECS}s --latency http://127.0.0.1:PORT/hits/bench" >>"$RES/commands.txt"
else
    echo "${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_load --addr 127.0.0.1:PORT --path /hits/bench --conns 64 --duration ${HTTP_SECS} --warmup ${HTTP_WARMUP}" >>"$RES/commands.txt"
fi
cat >>"$RES/commands.txt" <<EOF
# thread-per-core scaling: yieldloop's own examples, nothing pinned, a fresh
# server per run (stopped with SIGINT after the client); context switches summed
# over /proc/SERVER_PID/task/*/status right after the client exits
target/release/examples/echo_server --addr 127.0.0.1:PORT --workers {1|2} --quiet &   # PORT below the ephemeral range
timeout ${SCALE_TIMEOUT} target/release/examples/echo_load --addr 127.0.0.1:PORT --connections 64 --size 64 --duration ${SCALE_SECS} --threads {1|2} --server-pid SERVER_PID
EOF
cat >>"$RES/commands.txt" <<EOF
# databases: a redis-server and a PostgreSQL of their own, kept while stdin is open
bench/target/release/db_servers --redis --postgres <FIFO &
# round trips (Redis GET, PostgreSQL SELECT 1), one connection, one query after another
timeout ${DB_TIMEOUT} bench/target/release/db_roundtrip --db {redis|postgres} --route {native|on_tokio|on_tokio_mt|blocking|tokio|tokio_hop} --addr 127.0.0.1:PORT --n ${DB_N} --warmup ${DB_WARMUP}${DB_TOKIO_WORKERS:+ --tokio-workers $DB_TOKIO_WORKERS}
# the native route against tokio's own client, and on_tokio against tokio's own hop
# between runtimes, interleaved in one process, with the server pinned
# (taskset -a -p -c) to the client's core (one) or to the other one (split)
timeout ${DB_TIMEOUT} taskset -c 0 bench/target/release/db_roundtrip --db {redis|postgres} --route {native --vs tokio|on_tokio --vs tokio_hop} --pairs ${DB_PAIRS} --n ${DB_BATCH} --addr 127.0.0.1:PORT --warmup ${DB_WARMUP}
# a 1 ms ticker beside tasks waiting on the database (BLPOP with a timeout, pg_sleep),
# at normal priority and (where chrt works) under chrt -f 50
timeout ${DB_TIMEOUT} [chrt -f 50] bench/target/release/db_ticker --db {redis|postgres} --route {native|on_tokio|on_tokio_mt|blocking|tokio} --addr 127.0.0.1:PORT --tasks ${DB_TASKS} --wait-ms ${DB_WAIT_MS}${DB_TOKIO_WORKERS:+ --tokio-workers $DB_TOKIO_WORKERS}
EOF
cat >>"$RES/commands.txt" <<EOF
# feature hook: a call outside any task, plain build and hook build in turn
# (pinned like a server); 10,000 tasks each holding a connection, yieldloop's
# own TcpStream (plain build) or std's under the hook (its echo server is a
# child process of its own)
${PIN_SERVER:+$PIN_SERVER }bench/target/{release|hook/release}/hook_cost --iters ${HOOK_ITERS} --batches ${HOOK_BATCHES}
timeout ${HOOK_TIMEOUT} bench/target/release/hook_conns --mode native --n ${HOOK_N} --rounds ${HOOK_ROUNDS}
timeout ${HOOK_TIMEOUT} bench/target/hook/release/hook_conns --mode hook --n ${HOOK_N} --rounds ${HOOK_ROUNDS}
# fan-outs over two workers: broadcast (values to receivers) and skewed (Pareto CPU costs, seed 21)
timeout ${FANOUT_TIMEOUT} bench/target/release/fanout --runtime {yieldloop|tokio} --bench broadcast --n ${FANOUT_VALUES} --receivers ${FANOUT_RECEIVERS}
timeout ${FANOUT_TIMEOUT} bench/target/release/fanout --runtime {yieldloop|yieldloop-rr|tokio} --bench skewed --n ${FANOUT_TASKS}
# the task dump: N paused tasks, the dump and its text
timeout ${DIAG_TIMEOUT} bench/target/release/dump_time --n {${DIAG_NS// /|}}
# the counters' cost: revision ${DIAG_BASE} (built from git archive, in a
# target dir shared by such builds, bench/target/revs, and copied into
# bench/target/base) and today's, in alternating runs
(mkdir -p bench/target/base/src bench/target/base/release && git archive ${DIAG_BASE} | tar -x -C bench/target/base/src && cd bench/target/base/src/bench && CARGO_TARGET_DIR=../../../revs cargo build --release --bin handover --bin echo_yieldloop && cp ../../../revs/release/handover ../../../revs/release/echo_yieldloop ../../release/)
timeout ${HANDOVER_TIMEOUT} bench/target/{release|base/release}/handover --runtime yieldloop --bench {yield|spawn|pingpong|mutex}
${PIN_SERVER:+$PIN_SERVER }bench/target/{release|base/release}/echo_yieldloop --addr 127.0.0.1:PORT &   # driven by loadgen, 64 connections
# fairness: a flood beside an echo task, a fresh server per run (it prints
# the port of its count on stderr); tokio-mt (two workers) is not pinned
${PIN_SERVER:+$PIN_SERVER }bench/target/release/fairness --runtime {yieldloop|tokio|may} --flood {none|lines|chunks|chan} --addr 127.0.0.1:PORT &
bench/target/release/fairness --runtime tokio-mt --flood {none|lines|chunks|chan} --addr 127.0.0.1:PORT &
timeout ${FAIR_TIMEOUT} ${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/fairness_client --addr 127.0.0.1:PORT --stats 127.0.0.1:SPORT --flood {none|lines|chunks|chan} --secs ${FAIR_SECS}
# the budget's cost: revision ${FAIR_BASE} (built as ${DIAG_BASE} above, copied
# into bench/target/fairbase) and today's, in alternating runs
(mkdir -p bench/target/fairbase/src bench/target/fairbase/release && git archive ${FAIR_BASE} | tar -x -C bench/target/fairbase/src && cd bench/target/fairbase/src/bench && CARGO_TARGET_DIR=../../../revs cargo build --release --bin handover --bin echo_yieldloop --bin http_yieldloop && cp ../../../revs/release/handover ../../../revs/release/echo_yieldloop ../../../revs/release/http_yieldloop ../../release/)
timeout ${HANDOVER_TIMEOUT} bench/target/{release|fairbase/release}/handover --runtime yieldloop --bench {yield|spawn|pingpong|mutex}
${PIN_SERVER:+$PIN_SERVER }bench/target/{release|fairbase/release}/echo_yieldloop --addr 127.0.0.1:PORT &   # driven by loadgen, 64 and 512 connections
${PIN_SERVER:+$PIN_SERVER }bench/target/{release|fairbase/release}/http_yieldloop --addr 127.0.0.1:PORT &   # driven by the HTTP load generator, 64 connections
# recovery: a fresh redis-server per run; ${RECOVERY_KILL_AT} s into the load it is
# killed (kill -KILL), and ${RECOVERY_DOWN} s later started again on the same port
redis-server --port PORT --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile '' &
timeout $((${RECOVERY_SECS%.*} + 60)) bench/target/{release|hook/release}/redis_recovery --route {pooled|multiplexed|on_tokio|hook_pooled} --addr 127.0.0.1:PORT --secs ${RECOVERY_SECS} --tasks ${RECOVERY_TASKS}
# attacks held open: a fresh server per run (yieldloop with ServeConfig's
# defaults; hyper on tokio with a timer, so that its documented
# header_read_timeout of 30 s applies, and max_buf_size at its documented
# ~400 KB); VmRSS from /proc/SERVER_PID/status after one GET / and again
# ${ATTACK_SETTLE} s after the attackers are in; the normal client runs meanwhile,
# and again on the same server 1 s after they have gone; the attackers hold
# until their stdin (a FIFO) ends
${PIN_SERVER:+$PIN_SERVER }bench/target/release/http_{yieldloop|hyper --documented-limits} --addr 127.0.0.1:PORT &
${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_attack --addr 127.0.0.1:PORT --kind {body|idle} --conns ${ATTACK_CONNS} <FIFO &
${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_attack --addr 127.0.0.1:PORT --kind pipeline --conns ${ATTACK_PIPE_CONNS} --pipeline-bytes ${ATTACK_PIPE_BYTES} --path /page --rcvbuf ${ATTACK_PIPE_RCVBUF} <FIFO &
# the half-open TLS handshake, against hyper on yieldloop (serve_tls, yieldloop-rustls)
# and hyper on tokio (tokio-rustls), with a self-signed P-256 certificate
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout bench/target/attack-tls/key.pem -out bench/target/attack-tls/cert.pem -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1
${PIN_SERVER:+$PIN_SERVER }bench/target/release/{http_hyper_yieldloop|http_hyper --documented-limits} --addr 127.0.0.1:PORT --tls CERT.pem KEY.pem &
${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_attack --addr 127.0.0.1:PORT --kind tls-hello --conns ${ATTACK_CONNS} <FIFO &
EOF
if [ "$HTTP_LOAD" = wrk ]; then
    echo "${PIN_CLIENT:+$PIN_CLIENT }wrk -t1 -c ${ATTACK_CLIENT_CONNS} -d ${ATTACK_SECS}s --latency {http|https}://127.0.0.1:PORT/" >>"$RES/commands.txt"
else
    echo "${PIN_CLIENT:+$PIN_CLIENT }bench/target/release/http_load --addr 127.0.0.1:PORT --conns ${ATTACK_CLIENT_CONNS} --duration ${ATTACK_SECS} --warmup 0" >>"$RES/commands.txt"
fi
cat >>"$RES/commands.txt" <<EOF
# the stackful floor of the sleepers workload (no runtime), like sleepers
bench/target/release/rusage -o FILE -- timeout ${CELL_TIMEOUT} bench/target/release/sleepers_floor --n N
EOF
if [ -n "$GO_RUNS" ]; then
    cat >>"$RES/commands.txt" <<EOF
# Go ($GO_VERSION): one binary, built in bench/go; GOMAXPROCS=1 throughout,
# but 2 for xmutex (a lock between two threads), the fan-outs and the
# fairness stage's second Go row
(cd bench/go && GOPROXY=off go build -o ../target/go/gobench .)
timeout ${HANDOVER_TIMEOUT} env GOMAXPROCS=1 bench/target/go/gobench handover --bench {pingpong|bounded|mutex|yield|spawn|scope|blockon}
timeout ${HANDOVER_TIMEOUT} env GOMAXPROCS=2 bench/target/go/gobench xmutex --bench {contended|uncontended|uncontended_local}
timeout ${FANOUT_TIMEOUT} env GOMAXPROCS=2 bench/target/go/gobench fanout --bench {broadcast --n ${FANOUT_VALUES} --receivers ${FANOUT_RECEIVERS}|skewed --n ${FANOUT_TASKS}}
bench/target/release/rusage -o FILE -- timeout ${CELL_TIMEOUT} env GOMAXPROCS=1 bench/target/go/gobench sleepers --n N
${PIN_SERVER:+$PIN_SERVER }env GOMAXPROCS=1 bench/target/go/gobench echo --addr 127.0.0.1:PORT &   # driven by loadgen as above
${PIN_SERVER:+$PIN_SERVER }env GOMAXPROCS=1 bench/target/go/gobench fairness --flood {none|lines|chunks|chan} --addr 127.0.0.1:PORT &   # driven by fairness_client as above
env GOMAXPROCS=2 bench/target/go/gobench fairness --flood {none|lines|chunks|chan} --addr 127.0.0.1:PORT &   # not pinned
EOF
fi

# ---------------------------------------------------------------- first touch
# What the first touch of memory costs here, cold and warm (see
# bench/src/bin/firsttouch.rs): the report prints it and judges from it
# which sleepers runs were served cold memory. Measured at the start, and
# again just before the sleepers stage ($1: start or sleepers); the report
# takes the measurement that found the coldest memory.
first_touch() {
    local line
    log "first touch ($1): a GiB just freed (warm), then up to $FIRSTTOUCH_MAX_MB MiB looking for cold memory"
    if line=$("$BIN/firsttouch" --max-mb "$FIRSTTOUCH_MAX_MB" --settle "$FIRSTTOUCH_SETTLE" 2>>"$RES/firsttouch.err") && [ -n "$line" ]; then
        echo "$line when=$1" >>"$RES/firsttouch.txt"
    else
        log "note: firsttouch failed: $(tail -n1 "$RES/firsttouch.err")"
    fi
}
first_touch start

# ---------------------------------------------------------------- hand-over
# One measurement of stage $1 (handover or xmutex, whose programs print
# lines of the same shape); appends a result line (ok=1, or ok=1 na=1 for a
# benchmark the runtime cannot do) or a failure line (ok=0) to $1.txt.
handover_cell() {
    local stage=$1 rt=$2 b=$3 rep=$4 out err rc reason line
    out=$RES/cell.out
    err=$RES/cell.err
    bench_cmd "$rt" "$stage"
    timeout "$HANDOVER_TIMEOUT" "${CMD[@]}" --bench "$b" >"$out" 2>"$err"
    rc=$?
    line=$(grep -m1 "^$stage " "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        # rep and ok go first: a trailing reason= runs to the end of the line.
        echo "$stage rep=$rep ok=1 ${line#"$stage" }" >>"$RES/$stage.txt"
        case $line in *" na=1"*) return 1 ;; esac
        return 0
    fi
    reason=$(failure_reason "$rc" "$err" "$HANDOVER_TIMEOUT")
    cp "$err" "$RES/failed-$stage-$rt-$b.err"
    echo "$stage runtime=$rt bench=$b rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/$stage.txt"
    return 1
}

# Stage $1's cells, runs $2 of each: benchmarks "$3" by runtimes "$4".
# Repetitions interleave benchmarks and runtimes; a cell that failed (or
# does not apply) is not run again.
micro_stage() {
    local stage=$1 reps=$2 benches=$3 runtimes=$4 skip=" " rep b rt
    for rep in $(seq 1 "$reps"); do
        for b in $benches; do
            log "$stage $b run $rep/$reps"
            for rt in $runtimes; do
                case $skip in *" $rt/$b "*) continue ;; esac
                # yieldloop built with feature `tracing` (no subscriber) runs
                # only where the feature acts most: a resume and a pause per
                # yield, a span per spawn.
                case $rt/$b in
                    yieldloop-tracing/yield | yieldloop-tracing/spawn) ;;
                    yieldloop-tracing/*) continue ;;
                esac
                handover_cell "$stage" "$rt" "$b" "$rep" || skip="$skip$rt/$b "
            done
        done
    done
    rm -f "$RES/cell.out" "$RES/cell.err"
}

if want handover; then
    micro_stage handover "$HANDOVER_REPS" "pingpong bounded mutex yield spawn scope blockon" \
        "$(pick yieldloop) $(pick yieldloop | sed 's/yieldloop/yieldloop-tracing/') $(pick tokio may $GO_RUNS)"
fi

# ---------------------------------------------------------------- xmutex
# A mutex between two worker threads (contended) and the price of a lock
# that can cross threads (uncontended vs the single-thread one); Go with
# GOMAXPROCS=2. As many runs per cell as the hand-over stage.
if want xmutex; then
    micro_stage xmutex "$HANDOVER_REPS" "contended uncontended uncontended_local" \
        "$(pick yieldloop tokio $GO_RUNS)"
fi

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
    reason=$(failure_reason "$rc" "$err" "$LATENESS_TIMEOUT")
    cp "$err" "$RES/failed-lateness-$rt-$variant.err"
    echo "lateness runtime=$rt variant=$variant rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/lateness.txt"
    return 1
}

if want lateness; then
    LATENESS_VARIANTS=normal
    [ "$LATENESS_RT" = yes ] && LATENESS_VARIANTS="normal rt"
    skip=" "
    for rep in $(seq 1 "$LATENESS_REPS"); do
        log "lateness run $rep/$LATENESS_REPS ($LATENESS_VARIANTS)"
        for variant in $LATENESS_VARIANTS; do
            for rt in $(pick yieldloop tokio may); do
                case $skip in *" $rt/$variant "*) continue ;; esac
                lateness_cell "$rt" "$variant" "$rep" || skip="$skip$rt/$variant "
            done
        done
    done
    rm -f "$RES/cell.out" "$RES/cell.err"
fi

# ---------------------------------------------------------------- sleepers
# One measurement; appends a result line (ok=1) or a failure line (ok=0) to
# file $5 (sleepers.txt, or sleepers-warmup.txt for the discarded warm-up
# runs). $4 is the run's place in this repetition's order. The program runs
# under `rusage`, whose fields (CPU time, page faults) join the line.
sleepers_cell() {
    local rt=$1 n=$2 rep=$3 order=$4 file=$5 out err rc reason
    out=$RES/cell.out
    err=$RES/cell.err
    bench_cmd "$rt" sleepers
    rm -f "$RES/cell.ru"
    "$BIN/rusage" -o "$RES/cell.ru" -- timeout "$CELL_TIMEOUT" "${CMD[@]}" --n "$n" >"$out" 2>"$err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^sleepers ' "$out"; then
        echo "$(grep -m1 '^sleepers ' "$out") $(cat "$RES/cell.ru" 2>/dev/null) rep=$rep order=$order ok=1" >>"$file"
        return 0
    fi
    reason=$(failure_reason "$rc" "$err" "$CELL_TIMEOUT")
    cp "$err" "$RES/failed-$rt-$n.err"
    echo "sleepers runtime=$rt n=$n rep=$rep order=$order ok=0 status=$rc reason=$reason" >>"$file"
    return 1
}

# The peak memory of the hungriest warm-up run at N = $1 (MiB, from
# VmHWM, plus a tenth), or nothing when no warm-up run worked.
pretouch_mb() {
    awk -v n="$1" '
        $0 ~ " n=" n " " && / ok=1/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^hwm_kb=/) { v = substr($i, 8) + 0; if (v > m) m = v }
        }
        END { if (m > 0) printf "%d", m * 1.1 / 1024 + 1 }' "$RES/sleepers-warmup.txt" 2>/dev/null
}

# Large cells (N >= 100,000) touch up to gigabytes, and on a virtual machine
# memory the host has not backed for a few seconds costs several times more
# on first touch (the first-touch figures in firsttouch.txt). So that no
# runtime pays for the idle memory left by the stage before, each large N
# starts with a discarded warm-up run of every runtime (WARMUP=1; asyncio
# at 1,000,000 is left out, it takes a minute there), and every measured run
# there follows a pre-touch of as much memory as the hungriest warm-up run
# held (PRETOUCH=1), freed just before the run starts. The order of the
# runtimes rotates by one place per repetition, so each goes first as
# often as the others over as many repetitions as there are runtimes; a run
# still served cold memory shows in its system time per page fault, and
# the report flags it.
if want sleepers; then
    # Right after the first measurement there is nothing new to learn.
    [ "$STAGES" = sleepers ] || first_touch sleepers
    SLEEPERS_RTS=$(pick yieldloop tokio may threads floor $GO_RUNS)
    [ -n "$PY" ] && SLEEPERS_RTS="$SLEEPERS_RTS $(pick asyncio)"
    for n in $SLEEPERS_NS; do
        case $n in
            1000000) reps=$REPS_1M ;;
            100000) reps=$REPS_100K ;;
            *) reps=$REPS ;;
        esac
        failed=" "
        touch_mb=""
        if [ "$n" -ge 100000 ] && [ "$WARMUP" = 1 ]; then
            for rt in $SLEEPERS_RTS; do
                if [ "$rt" = threads ] && [ "$n" -gt 10000 ]; then continue; fi
                if [ "$rt" = asyncio ] && [ "$n" -ge 1000000 ]; then continue; fi
                log "sleepers $rt n=$n warm-up (discarded)"
                sleepers_cell "$rt" "$n" 0 0 "$RES/sleepers-warmup.txt"
            done
            [ "$PRETOUCH" = 1 ] && touch_mb=$(pretouch_mb "$n")
        fi
        # Repetitions interleave the runtimes, so a burst of outside load
        # does not land on one runtime only.
        for rep in $(seq 1 "$reps"); do
            lineup=()
            for rt in $SLEEPERS_RTS; do
                # Threads: only up to 10,000 (the article's point is that they
                # hit a ceiling); a failed cell is not repeated.
                if [ "$rt" = threads ] && [ "$n" -gt 10000 ]; then continue; fi
                case $failed in *" $rt "*) continue ;; esac
                if [ "$rt" = asyncio ] && [ "$n" -eq 1000000 ] && [ "$rep" -gt "$REPS_1M_ASYNCIO" ]; then continue; fi
                lineup+=("$rt")
            done
            k=${#lineup[@]}
            for ((i = 0; i < k; i++)); do
                rt=${lineup[(i + rep - 1) % k]}
                if [ -n "$touch_mb" ]; then
                    "$BIN/firsttouch" --pretouch --mb "$touch_mb" 2>>"$RES/pretouch.err" ||
                        log "note: pre-touch of $touch_mb MiB failed (see pretouch.err)"
                fi
                log "sleepers $rt n=$n run $rep/$reps (position $((i + 1)) of $k${touch_mb:+, after a pre-touch of $touch_mb MiB})"
                sleepers_cell "$rt" "$n" "$rep" "$((i + 1))" "$RES/sleepers.txt" || failed="$failed$rt "
            done
        done
    done
    rm -f "$RES/cell.out" "$RES/cell.err" "$RES/cell.ru"
fi

# ---------------------------------------------------------------- echo
oncpu_ns() { # nanoseconds every thread of a process has run, from schedstat
    local f a total=0
    for f in /proc/"$1"/task/*/schedstat; do
        read -r a _ <"$f" 2>/dev/null && total=$((total + a))
    done
    echo "$total"
}
stat_ticks() { # user and system ticks of a process
    sed 's/.*) //' "/proc/$1/stat" | awk '{print $12, $13}'
}

# Server ports are taken below the ephemeral range: a client socket left in
# TIME_WAIT on an ephemeral port would otherwise make the bind fail.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_lo=32768
port=$((eph_lo > 21000 ? 21000 : 1024 + 2000))

# Starts server binary $1 (echo_tokio, http_hyper, fairness_go, ...) on a
# free port (trying a few), with the further arguments "${@:2}"; sets $spid
# and $addr. DIR/NAME is binary NAME of another build, in target/DIR/release
# (hook/service_hook, fairbase/http_yieldloop).
start_server() {
    local tries
    for tries in 1 2 3 4 5; do
        port=$((port + 1))
        addr=127.0.0.1:$port
        case $1 in
            echo_*) bench_cmd "${1#echo_}" echo ;;
            fairness_*) bench_cmd "${1#fairness_}" fairness ;;
            */*) CMD=("$BENCH/target/${1%%/*}/release/${1#*/}") ;;
            *) CMD=("$BIN/$1") ;;
        esac
        # shellcheck disable=SC2086
        $PIN_SERVER "${CMD[@]}" --addr "$addr" "${@:2}" 2>"$RES/server.err" &
        spid=$!
        sleep 0.2
        if kill -0 "$spid" 2>/dev/null; then
            return 0
        fi
        wait "$spid" 2>/dev/null
    done
    return 1
}

# One echo measurement: starts echo server $1 (echo_yieldloop, echo_base,
# ...), drives it with loadgen over $2 connections for ECHO_SECS, and stops
# it; $3 is what the log line calls the run. Sets ECHO_LINE to the record's
# fields (the server's user and system ticks and on-CPU time over the run,
# then the load generator's) and returns 0, or sets ECHO_WHY and returns 1.
echo_measure() {
    local out rc u0 s0 u1 s1 c0 c1
    if ! start_server "$1"; then
        ECHO_WHY="server did not start: $(tail -n1 "$RES/server.err")"
        return 1
    fi
    log "$3 ($addr)"
    read -r u0 s0 < <(stat_ticks "$spid")
    c0=$(oncpu_ns "$spid")
    # shellcheck disable=SC2086
    out=$($PIN_CLIENT "$BIN/loadgen" --addr "$addr" --conns "$2" --size 64 \
        --duration "$ECHO_SECS" --warmup "$ECHO_WARMUP" 2>"$RES/client.err")
    rc=$?
    sleep 0.2
    read -r u1 s1 < <(stat_ticks "$spid")
    c1=$(oncpu_ns "$spid")
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    if [ $rc -eq 0 ] && [ -n "$out" ]; then
        ECHO_LINE="utime=$((u1 - u0)) stime=$((s1 - s0)) oncpu_ns=$((c1 - c0)) ${out#loadgen }"
        return 0
    fi
    ECHO_WHY="loadgen exit $rc: $(tail -n1 "$RES/client.err")"
    return 1
}

if want echo; then
    for rep in $(seq 1 "$ECHO_REPS"); do
        for server in $(pick yieldloop tokio may mio $GO_RUNS); do
            for conns in 1 64 512; do
                if echo_measure "echo_$server" "$conns" "echo $server conns=$conns run $rep/$ECHO_REPS"; then
                    echo "echo server=$server rep=$rep $ECHO_LINE ok=1" >>"$RES/echo.txt"
                else
                    echo "echo server=$server conns=$conns rep=$rep ok=0 reason=$ECHO_WHY" >>"$RES/echo.txt"
                fi
            done
        done
    done
    rm -f "$RES/server.err" "$RES/client.err"
fi

# ---------------------------------------------------------------- syscalls
# System calls per round trip at 1 connection, where every round trip is a
# sleep and a wake-up of the server: one run per server, counted by the
# kernel's syscall tracepoints through `perf stat` (which, unlike strace,
# does not slow the server down and so does not change how often it finds
# the next message already there).
if want syscalls; then
    rm -f "$RES/syscalls.txt"
    SYSCALLS="epoll_wait epoll_pwait recvfrom read sendto write futex"
    if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1; then
        events=raw_syscalls:sys_enter
        for c in $SYSCALLS; do events="$events,syscalls:sys_enter_$c"; done
        for server in $(pick yieldloop tokio may mio $GO_RUNS); do
            if ! start_server "echo_$server"; then
                echo "syscalls server=$server ok=0" >>"$RES/syscalls.txt"
                continue
            fi
            log "syscalls $server ($addr)"
            perf stat -x, -e "$events" -p "$spid" -o "$RES/perf.out" &
            ppid=$!
            sleep 0.2
            # shellcheck disable=SC2086
            out=$($PIN_CLIENT "$BIN/loadgen" --addr "$addr" --conns 1 --size 64 --duration 2 --warmup 0 2>/dev/null)
            kill -INT "$ppid" 2>/dev/null
            wait "$ppid" 2>/dev/null
            kill "$spid" 2>/dev/null
            wait "$spid" 2>/dev/null
            rt=$(echo "$out" | sed -n 's/.* rt_total=\([0-9]*\).*/\1/p')
            if [ -n "$rt" ] && [ -s "$RES/perf.out" ]; then
                calls=$(awk -F, '$1 ~ /^[0-9]+$/ { n = $3; sub(/.*sys_enter_?/, "", n); if (n == "") n = "total"; printf " %s=%s", n, $1 }' "$RES/perf.out")
                echo "syscalls server=$server rt_total=$rt$calls ok=1" >>"$RES/syscalls.txt"
            else
                echo "syscalls server=$server ok=0" >>"$RES/syscalls.txt"
            fi
        done
        rm -f "$RES/perf.out"
    else
        echo "perf with syscall tracepoints missing: the system-call table is left out"
    fi
fi

# ---------------------------------------------------------------- http
# One scheduler / one thread per server, keep-alive connections in a closed
# loop of GET /. Server CPU is read as for echo.

# wrk's report (on stdin) as http_load's fields; fails if it has no count.
parse_wrk() {
    awk -v conns="$1" '
        function us(v) {
            if (v ~ /us$/) return v + 0
            if (v ~ /ms$/) return (v + 0) * 1000
            if (v ~ /m$/) return (v + 0) * 60e6
            return (v + 0) * 1e6
        }
        $1 == "50%" { p50 = us($2) }
        $1 == "99%" { p99 = us($2) }
        / requests in / { total = $1; secs = $4; sub(/s,$/, "", secs) }
        $1 == "Requests/sec:" { rps = $2 }
        /Socket errors:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) errors += $i + 0 }
        /Non-2xx or 3xx responses:/ { errors += $NF }
        END {
            if (total == "") exit 1
            printf "conns=%s secs=%s requests_total=%s requests=%s rps=%.0f p50_us=%.1f p99_us=%.1f errors=%d\n",
                conns, secs, total, total, rps, p50, p99, errors
        }'
}

# One HTTP measurement: starts server $1 (http_yieldloop, ...; see
# start_server), drives it with the load generator over $2 keep-alive
# connections for HTTP_SECS, and stops it; $3 is what the log line calls
# the run. Sets HTTP_LINE to the record's fields (the load generator, the
# server's user and system ticks and on-CPU time over the run, then the
# load generator's own) and returns 0, or sets HTTP_WHY and returns 1.
http_measure() {
    local raw out rc u0 s0 u1 s1 c0 c1
    if ! start_server "$1"; then
        HTTP_WHY="server did not start: $(tail -n1 "$RES/server.err")"
        return 1
    fi
    log "$3 ($addr, $HTTP_LOAD)"
    read -r u0 s0 < <(stat_ticks "$spid")
    c0=$(oncpu_ns "$spid")
    if [ "$HTTP_LOAD" = wrk ]; then
        # shellcheck disable=SC2086
        raw=$(timeout "$HTTP_TIMEOUT" $PIN_CLIENT wrk -t1 -c "$2" -d "${HTTP_SECS}s" \
            --latency "http://$addr/" 2>"$RES/client.err")
        rc=$?
        out=$(printf '%s\n' "$raw" | parse_wrk "$2") || { [ $rc -eq 0 ] && rc=1; }
    else
        # shellcheck disable=SC2086
        out=$(timeout "$HTTP_TIMEOUT" $PIN_CLIENT "$BIN/http_load" --addr "$addr" --conns "$2" \
            --duration "$HTTP_SECS" --warmup "$HTTP_WARMUP" 2>"$RES/client.err")
        rc=$?
        out=${out#http_load }
    fi
    sleep 0.2
    read -r u1 s1 < <(stat_ticks "$spid")
    c1=$(oncpu_ns "$spid")
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    if [ $rc -eq 0 ] && [ -n "$out" ]; then
        HTTP_LINE="load=$HTTP_LOAD utime=$((u1 - u0)) stime=$((s1 - s0)) oncpu_ns=$((c1 - c0)) $out"
        return 0
    fi
    case $rc in
        124) HTTP_WHY="$HTTP_LOAD killed after ${HTTP_TIMEOUT} s (timeout)" ;;
        *) HTTP_WHY="$HTTP_LOAD exit $rc: $(tail -n1 "$RES/client.err")" ;;
    esac
    return 1
}

if want http; then
    case $HTTP_LOAD in
        none*)
            why=${HTTP_LOAD#none (}
            why=${why%)}
            log "http: skipped: $why"
            echo "http ok=0 skipped=1 reason=$why" >>"$RES/http.txt"
            ;;
        *)
            for rep in $(seq 1 "$HTTP_REPS"); do
                for server in yieldloop hyper hyper_yieldloop; do
                    for conns in 64 256; do
                        if http_measure "http_$server" "$conns" "http $server conns=$conns run $rep/$HTTP_REPS"; then
                            echo "http server=$server rep=$rep $HTTP_LINE ok=1" >>"$RES/http.txt"
                        else
                            echo "http server=$server conns=$conns rep=$rep load=$HTTP_LOAD ok=0 reason=$HTTP_WHY" >>"$RES/http.txt"
                        fi
                    done
                done
            done
            rm -f "$RES/server.err" "$RES/client.err"
            ;;
    esac
fi

# ---------------------------------------------------------------- http2
# HTTP/2 with prior knowledge (h2c) on one thread: hyper-util's auto server
# on tokio current_thread (http2_hyper) and on yieldloop
# (http2_hyper_yieldloop: yieldloop_http::with_hyper::serve_auto), both a
# task per connection and one per stream, driven by h2load over
# HTTP2_CONNS connections of HTTP2_STREAMS concurrent streams each. Per
# run: a fresh pinned server, a discarded warm-up run of HTTP2_WARMUP_N
# requests (connections of its own), then the measured run of HTTP2_N; the
# server's CPU (as for echo) is read just before the measured run and 0.2 s
# after it. The servers in turn, the order flipped every run. The stage's
# settings go into its first record, so that its section reads from
# http2.txt alone (`report --section http2` after a run of this stage).

# h2load's report (on stdin) as fields; fails if no request succeeded.
parse_h2load() {
    awk '
        function us(v) {
            if (v ~ /us$/) return v + 0
            if (v ~ /ms$/) return (v + 0) * 1000
            return (v + 0) * 1e6
        }
        /^finished in / { v = $3; sub(/,$/, "", v); secs = us(v) / 1e6; rps = $4 }
        /^requests: / { total = $2; done = $6; ok = $8; failed = $10; errored = $12; tmo = $14 }
        /^status codes: / { s2xx = $3 }
        /^time for request:/ { rmin = us($4); rmax = us($5); rmean = us($6); rsd = us($7) }
        END {
            if (ok == "" || ok == 0) exit 1
            printf "secs=%.4f rps=%.0f requests=%s done=%s succeeded=%s failed=%s errored=%s timeout=%s status_2xx=%s req_min_us=%.0f req_max_us=%.0f req_mean_us=%.0f req_sd_us=%.0f\n",
                secs, rps, total, done, ok, failed, errored, tmo, s2xx, rmin, rmax, rmean, rsd
        }'
}

# One run of server $1 (hyper or hyper_yieldloop), rep $2; appends a record
# to http2.txt.
http2_cell() {
    local server=$1 rep=$2 what="http2 server=$1 rep=$2" raw out rc u0 s0 u1 s1 c0 c1 url
    if ! start_server "http2_$server"; then
        echo "$what ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/http2.txt"
        return 1
    fi
    url=http://$addr/
    log "http2 $server run $rep/$HTTP2_REPS ($addr)"
    # shellcheck disable=SC2086
    timeout "$HTTP2_TIMEOUT" $PIN_CLIENT h2load -c "$HTTP2_CONNS" -m "$HTTP2_STREAMS" \
        -n "$HTTP2_WARMUP_N" "$url" >/dev/null 2>"$RES/client.err"
    rc=$?
    if [ $rc -eq 0 ]; then
        read -r u0 s0 < <(stat_ticks "$spid")
        c0=$(oncpu_ns "$spid")
        # shellcheck disable=SC2086
        raw=$(timeout "$HTTP2_TIMEOUT" $PIN_CLIENT h2load -c "$HTTP2_CONNS" -m "$HTTP2_STREAMS" \
            -n "$HTTP2_N" "$url" 2>"$RES/client.err")
        rc=$?
        sleep 0.2
        read -r u1 s1 < <(stat_ticks "$spid")
        c1=$(oncpu_ns "$spid")
        out=$(printf '%s\n' "$raw" | parse_h2load) || { [ $rc -eq 0 ] && rc=1; }
    fi
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    if [ $rc -eq 0 ]; then
        echo "$what conns=$HTTP2_CONNS streams=$HTTP2_STREAMS utime=$((u1 - u0)) stime=$((s1 - s0)) oncpu_ns=$((c1 - c0)) $out ok=1" >>"$RES/http2.txt"
        return 0
    fi
    case $rc in
        124) echo "$what ok=0 reason=h2load killed after $HTTP2_TIMEOUT s (timeout)" >>"$RES/http2.txt" ;;
        *) echo "$what ok=0 reason=h2load exit $rc: $(grep -v '^ *$' "$RES/client.err" | tail -n1 | cut -c1-200)" >>"$RES/http2.txt" ;;
    esac
    return 1
}

if want http2; then
    rm -f "$RES/http2.txt"
    if ! command -v h2load >/dev/null; then
        log "http2: skipped: h2load not found"
        echo "http2 ok=0 skipped=1 reason=h2load not found (apt-get install nghttp2-client)" >>"$RES/http2.txt"
    else
        # Values without spaces (a record is space-separated fields).
        echo "http2 kind=setup h2load=$(h2load --version | awk '{print $2; exit}') conns=$HTTP2_CONNS streams=$HTTP2_STREAMS n=$HTTP2_N warmup_n=$HTTP2_WARMUP_N reps=$HTTP2_REPS pin_server=$(tr ' ' _ <<<"${PIN_SERVER:-none}") pin_client=$(tr ' ' _ <<<"${PIN_CLIENT:-none}") clk_tck=$(getconf CLK_TCK) date=$(date -u +%Y-%m-%dT%H:%MZ) load_start=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >>"$RES/http2.txt"
        for rep in $(seq 1 "$HTTP2_REPS"); do
            for server in $(in_turn "$rep" hyper_yieldloop hyper); do
                http2_cell "$server" "$rep"
            done
        done
        echo "http2 kind=end load_end=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >>"$RES/http2.txt"
    fi
    rm -f "$RES/server.err" "$RES/client.err"
fi

# ---------------------------------------------------------------- service
# The example service's Redis endpoint on one thread: GET /hits/bench, one
# Redis GET per request, 64 keep-alive connections in a closed loop. One
# redis-server for the stage, pinned with the client so that the service's
# core is its own. Service and Redis CPU are read as for HTTP.
if want service; then
    why=""
    case $HTTP_LOAD in none*) why=${HTTP_LOAD#none (}; why=${why%)} ;; esac
    command -v redis-server >/dev/null || why="redis-server not found (apt-get install redis-server)"
    if [ -z "$why" ]; then
        port=$((port + 1))
        rport=$port
        # shellcheck disable=SC2086
        $PIN_CLIENT redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
            --daemonize no --logfile '' >"$RES/redis.log" 2>&1 &
        rpid=$!
        for _ in $(seq 1 50); do
            (exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null && break
            sleep 0.1
        done
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null; then
            why="redis-server did not start: $(tail -n1 "$RES/redis.log")"
            kill "$rpid" 2>/dev/null
            wait "$rpid" 2>/dev/null
        fi
    fi
    if [ -n "$why" ]; then
        log "service: skipped: $why"
        echo "service ok=0 skipped=1 reason=$why" >>"$RES/service.txt"
    else
        for rep in $(seq 1 "$SERVICE_REPS"); do
            for server in $(in_turn "$rep" yieldloop tokio yieldloop-pool yieldloop-hook); do
                what="service server=$server conns=64 rep=$rep load=$HTTP_LOAD"
                case $server in
                    yieldloop-pool) bin=service_yieldloop pool=--pool ;;
                    yieldloop-hook) bin=hook/service_hook pool="" ;;
                    *) bin=service_$server pool="" ;;
                esac
                if [ "$server" = yieldloop-hook ] && [ "$HOOK_BUILD" != yes ]; then
                    echo "$what ok=0 reason=$HOOK_BUILD" >>"$RES/service.txt"
                    continue
                fi
                # shellcheck disable=SC2086
                if ! start_server "$bin" --redis "127.0.0.1:$rport" $pool; then
                    echo "$what ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/service.txt"
                    continue
                fi
                log "service $server run $rep/$SERVICE_REPS ($addr, Redis on $rport, $HTTP_LOAD)"
                read -r u0 s0 < <(stat_ticks "$spid")
                read -r ru0 rs0 < <(stat_ticks "$rpid")
                if [ "$HTTP_LOAD" = wrk ]; then
                    # shellcheck disable=SC2086
                    raw=$(timeout "$HTTP_TIMEOUT" $PIN_CLIENT wrk -t1 -c 64 -d "${HTTP_SECS}s" \
                        --latency "http://$addr/hits/bench" 2>"$RES/client.err")
                    rc=$?
                    out=$(printf '%s\n' "$raw" | parse_wrk 64) || { [ $rc -eq 0 ] && rc=1; }
                else
                    # shellcheck disable=SC2086
                    out=$(timeout "$HTTP_TIMEOUT" $PIN_CLIENT "$BIN/http_load" --addr "$addr" --path /hits/bench \
                        --conns 64 --duration "$HTTP_SECS" --warmup "$HTTP_WARMUP" 2>"$RES/client.err")
                    rc=$?
                    out=${out#http_load }
                fi
                sleep 0.2
                read -r u1 s1 < <(stat_ticks "$spid")
                read -r ru1 rs1 < <(stat_ticks "$rpid")
                kill "$spid" 2>/dev/null
                wait "$spid" 2>/dev/null
                if [ $rc -eq 0 ] && [ -n "$out" ]; then
                    echo "service server=$server rep=$rep load=$HTTP_LOAD utime=$((u1 - u0)) stime=$((s1 - s0)) redis_utime=$((ru1 - ru0)) redis_stime=$((rs1 - rs0)) $out ok=1" >>"$RES/service.txt"
                else
                    case $rc in
                        124) reason="$HTTP_LOAD killed after ${HTTP_TIMEOUT} s (timeout)" ;;
                        *) reason="$HTTP_LOAD exit $rc: $(tail -n1 "$RES/client.err")" ;;
                    esac
                    echo "$what ok=0 reason=$reason" >>"$RES/service.txt"
                fi
            done
        done
        kill "$rpid" 2>/dev/null
        wait "$rpid" 2>/dev/null
        rm -f "$RES/server.err" "$RES/client.err" "$RES/redis.log"
    fi
fi

# ---------------------------------------------------------------- scaling
# yieldloop's own echo server with one or two workers (one scheduler per
# thread, SO_REUSEPORT listeners) against its own load client with one or two
# threads. Nothing is pinned: on a 2-core machine both share both cores.

ctxt_switches() { # voluntary and involuntary context switches, summed over a process's threads
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/^voluntary_ctxt_switches:/ { v += $2 } /^nonvoluntary_ctxt_switches:/ { n += $2 } END { print v + 0, n + 0 }'
}

# Starts echo_server with $1 workers on a free port (trying a few), the same
# way start_server does, and also waits (up to 2 s) for its "listening on"
# line, printed once its listeners are bound; sets $spid and $addr.
start_scaling_server() {
    local tries i
    for tries in 1 2 3 4 5; do
        port=$((port + 1))
        addr=127.0.0.1:$port
        "$EX/echo_server" --addr "$addr" --workers "$1" --quiet 2>"$RES/server.err" &
        spid=$!
        sleep 0.2
        for i in $(seq 1 20); do
            grep -q 'listening on' "$RES/server.err" && break
            kill -0 "$spid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$spid" 2>/dev/null && grep -q 'listening on' "$RES/server.err"; then
            return 0
        fi
        kill -KILL "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
    done
    return 1
}

# SIGINT (the server stops accepting, drains and exits); SIGKILL if it is
# still there after 5 s.
stop_scaling_server() {
    local i
    kill -INT "$spid" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$spid" 2>/dev/null; then
        log "scaling: echo_server $spid did not exit 5 s after SIGINT; killing it"
        kill -KILL "$spid" 2>/dev/null
    fi
    wait "$spid" 2>/dev/null
}

if want scaling; then
    for rep in $(seq 1 "$SCALE_REPS"); do
        for clients in 1 2; do
            for workers in 1 2; do
                what="scaling workers=$workers clients=$clients rep=$rep"
                if ! start_scaling_server "$workers"; then
                    echo "$what ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/scaling.txt"
                    continue
                fi
                log "scaling workers=$workers clients=$clients run $rep/$SCALE_REPS ($addr)"
                out=$(timeout "$SCALE_TIMEOUT" "$EX/echo_load" --addr "$addr" --connections 64 --size 64 \
                    --duration "$SCALE_SECS" --threads "$clients" --server-pid "$spid" 2>"$RES/client.err")
                rc=$?
                read -r vcs ivcs < <(ctxt_switches "$spid")
                stop_scaling_server
                # "64 connections, 64-byte messages, 4.0 s: N round trips, R per second"
                # and, last, "rps R conns 64 size 64 server_us_per_rt X".
                rts=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) round trips,.*/\1/p' | head -n1)
                last=$(printf '%s\n' "$out" | grep '^rps ' | tail -n1)
                rps=$(awk '{ for (i = 1; i < NF; i++) if ($i == "rps") print $(i + 1) }' <<<"$last")
                us=$(awk '{ for (i = 1; i < NF; i++) if ($i == "server_us_per_rt") print $(i + 1) }' <<<"$last")
                if [ $rc -ne 0 ]; then
                    case $rc in
                        124) reason="echo_load killed after ${SCALE_TIMEOUT} s (timeout)" ;;
                        *) reason="echo_load exit $rc: $(tail -n1 "$RES/client.err")" ;;
                    esac
                    echo "$what ok=0 reason=$reason" >>"$RES/scaling.txt"
                elif [ -z "$rts" ] || [ -z "$rps" ] || [ -z "$us" ] || [ "$rts" -eq 0 ]; then
                    echo "$what ok=0 reason=unexpected echo_load output: $(printf '%s' "$out" | tail -n1)" >>"$RES/scaling.txt"
                else
                    per=$(awk -v v="$vcs" -v n="$ivcs" -v r="$rts" 'BEGIN { printf "vcs_per_rt=%.5f ivcs_per_rt=%.5f", v / r, n / r }')
                    echo "$what ok=1 rps=$rps server_us_per_rt=$us round_trips=$rts $per" >>"$RES/scaling.txt"
                fi
            done
        done
    done
    rm -f "$RES/server.err" "$RES/client.err"
fi

# ---------------------------------------------------------------- db
# Database round trips and the ticker beside database waits, against a
# redis-server and a PostgreSQL of the stage's own (bench/src/bin/db_servers.rs
# starts them the way the tests do: free ports on 127.0.0.1, temporary
# directories, PostgreSQL as an unprivileged user; it stops them when its
# stdin, a FIFO held open here, closes). A missing server skips its cells.
# Nothing is pinned: the on_tokio route needs tokio's workers beside the
# scheduler's thread, and the servers run beside the client.

# One run of db_$1 (roundtrip or ticker; pairs: db_roundtrip --vs, pinned
# to the first core) for database $2, route $3, rep $4, at priority $5
# (normal, or rt: under `chrt -f 50` as for the timer lateness; for pairs,
# the server's placement), with the server at $6 and the binary's own
# arguments after; appends a result line (ok=1) or a failure line (ok=0).
db_cell() {
    local kind=$1 db=$2 route=$3 rep=$4 variant=$5 addr=$6 out err rc reason line prio=() workers=() bin
    shift 6
    bin=db_$kind
    [ "$kind" = pairs ] && bin=db_roundtrip && prio=(taskset -c 0)
    [ -n "$DB_TOKIO_WORKERS" ] && workers=(--tokio-workers "$DB_TOKIO_WORKERS")
    out=$RES/cell.out
    err=$RES/cell.err
    [ "$variant" = rt ] && prio=(chrt -f 50)
    timeout "$DB_TIMEOUT" "${prio[@]}" "$BIN/$bin" --db "$db" --route "$route" --addr "$addr" "${workers[@]}" "$@" >"$out" 2>"$err"
    rc=$?
    line=$(grep -m1 "^$bin " "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        echo "db kind=$kind variant=$variant rep=$rep ok=1 ${line#"$bin" }" >>"$RES/db.txt"
        return 0
    fi
    case $rc in
        124) reason="killed after ${DB_TIMEOUT} s (timeout)" ;;
        *) reason=$(grep -v '^ *$' "$err" | tail -n 1 | tr -d '\r' | cut -c1-200) ;;
    esac
    [ -n "$reason" ] || reason="exit status $rc"
    echo "db kind=$kind db=$db route=$route variant=$variant rep=$rep ok=0 status=$rc reason=$reason" >>"$RES/db.txt"
    return 1
}

if want db; then
    log "db: starting redis-server and PostgreSQL"
    dbdir=$(mktemp -d)
    mkfifo "$dbdir/in"
    "$BIN/db_servers" --redis --postgres <"$dbdir/in" >"$dbdir/out" 2>"$RES/db_servers.err" &
    dbpid=$!
    exec {dbfd}>"$dbdir/in"
    for _ in $(seq 1 1200); do
        grep -q '^ready$' "$dbdir/out" && break
        kill -0 "$dbpid" 2>/dev/null || break
        sleep 0.1
    done
    declare -A DB_ADDR=() DB_PID=()
    for db in redis postgres; do
        line=$(grep -m1 "^server db=$db " "$dbdir/out")
        case $line in
            *" ok=1 "*)
                DB_ADDR[$db]=$(sed 's/.* addr=\([^ ]*\).*/\1/' <<<"$line")
                DB_PID[$db]=$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' <<<"$line")
                log "db: $db on ${DB_ADDR[$db]}"
                ;;
            *" ok=0 "*)
                log "db: $db skipped: ${line#* reason=}"
                echo "db db=$db ok=0 skipped=1 reason=${line#* reason=}" >>"$RES/db.txt"
                ;;
            *)
                why=$(grep -v '^ *$' "$RES/db_servers.err" | tail -n 1 | cut -c1-200)
                log "db: $db did not start: $why"
                echo "db db=$db ok=0 skipped=1 reason=did not start: ${why:-no answer from db_servers}" >>"$RES/db.txt"
                ;;
        esac
    done
    command -v redis-server >/dev/null &&
        echo "db_redis=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')" >>"$RES/meta.txt"
    pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$pgbin" ] && echo "db_postgres=$("$pgbin/postgres" --version | sed 's/.*) //')" >>"$RES/meta.txt"
    # The ticker also runs at realtime priority where chrt works (see the
    # timer lateness), so that the machine's other load does not hide what
    # the route itself does to the thread.
    db_variants=normal
    [ "$LATENESS_RT" = yes ] && db_variants="normal rt"
    skip=" "
    reps=$DB_REPS
    [ "$DB_RT_REPS" -gt "$reps" ] && reps=$DB_RT_REPS
    for rep in $(seq 1 "$reps"); do
        # tokio_hop, tokio's own hop between two runtimes, is the on_tokio
        # hop's yardstick; the ticker has no such route.
        routes=$(in_turn "$rep" native on_tokio on_tokio_mt blocking tokio)
        rt_routes=$(in_turn "$rep" native on_tokio on_tokio_mt blocking tokio tokio_hop)
        for db in redis postgres; do
            [ -n "${DB_ADDR[$db]:-}" ] || continue
            for route in $rt_routes; do
                [ "$rep" -le "$DB_RT_REPS" ] || break
                case $skip in *" roundtrip/$db/$route "*) continue ;; esac
                log "db roundtrip $db $route run $rep/$DB_RT_REPS"
                db_cell roundtrip "$db" "$route" "$rep" normal "${DB_ADDR[$db]}" --n "$DB_N" --warmup "$DB_WARMUP" ||
                    skip="${skip}roundtrip/$db/$route "
            done
            for variant in $db_variants; do
                [ "$rep" -le "$DB_REPS" ] || break
                for route in $routes; do
                    case $skip in *" ticker/$db/$route/$variant "*) continue ;; esac
                    log "db ticker $db $route ($variant priority) run $rep/$DB_REPS"
                    db_cell ticker "$db" "$route" "$rep" "$variant" "${DB_ADDR[$db]}" --tasks "$DB_TASKS" --wait-ms "$DB_WAIT_MS" ||
                        skip="${skip}ticker/$db/$route/$variant "
                done
            done
        done
    done
    # The native route against tokio's own client, interleaved: both in one
    # process, pinned to the first core, running batches in turn (see
    # db_roundtrip --vs). Run by run, where the kernel happens to put the
    # client relative to the server (on the server's core, where each
    # wake-up is a plain switch, or on the other, where it is a cross-core
    # wake-up) moves a route's CPU per query by half, which hides what the
    # route itself costs; here the server is pinned too: to the client's
    # core ("one"), or to the other one ("split", with two cores or more).
    # PostgreSQL forks the connection's backend from the pinned postmaster.
    # The on_tokio route against tokio's own hop between two runtimes
    # (tokio_hop) is compared the same way.
    places=one
    [ "$(nproc)" -ge 2 ] && places="one split"
    for db in redis postgres; do
        [ -n "${DB_ADDR[$db]:-}" ] && [ -n "${DB_PID[$db]:-}" ] || continue
        for place in $places; do
            cpu=0
            [ "$place" = split ] && cpu=1
            if ! taskset -a -p -c "$cpu" "${DB_PID[$db]}" >/dev/null 2>&1; then
                echo "db kind=pairs db=$db route=native variant=$place rep=1 ok=0 reason=taskset could not pin the server" >>"$RES/db.txt"
                continue
            fi
            log "db pairs $db native vs tokio, server $place"
            db_cell pairs "$db" native 1 "$place" "${DB_ADDR[$db]}" --vs tokio --pairs "$DB_PAIRS" --n "$DB_BATCH" --warmup "$DB_WARMUP"
            log "db pairs $db on_tokio vs tokio_hop, server $place"
            db_cell pairs "$db" on_tokio 1 "$place" "${DB_ADDR[$db]}" --vs tokio_hop --pairs "$DB_PAIRS" --n "$DB_BATCH" --warmup "$DB_WARMUP"
            taskset -a -p -c "0-$(($(nproc) - 1))" "${DB_PID[$db]}" >/dev/null 2>&1
        done
    done
    exec {dbfd}>&-
    wait "$dbpid" 2>/dev/null
    rm -rf "$dbdir"
    rm -f "$RES/cell.out" "$RES/cell.err"
fi

# ---------------------------------------------------------------- hook
# Feature `hook`: what an intercepted call costs outside any task (the same
# program built without and with the feature, run in turn, pinned like a
# server), and 10,000 tasks each holding a connection: yieldloop's own
# TcpStream (plain build) against std's TcpStream under the hook.
if want hook; then
    if [ "$HOOK_BUILD" != yes ]; then
        log "hook: skipped: $HOOK_BUILD"
        echo "hook ok=0 skipped=1 reason=$HOOK_BUILD" >>"$RES/hook.txt"
    else
        for rep in $(seq 1 "$HOOK_REPS"); do
            for build in plain hook; do
                bin=$BIN/hook_cost
                [ "$build" = hook ] && bin=$HBIN/hook_cost
                log "hook cost, $build build, run $rep/$HOOK_REPS"
                # shellcheck disable=SC2086
                out=$(timeout "$HOOK_TIMEOUT" $PIN_SERVER "$bin" --iters "$HOOK_ITERS" --batches "$HOOK_BATCHES" 2>"$RES/cell.err")
                rc=$?
                if [ $rc -eq 0 ] && grep -q '^hook_cost ' <<<"$out"; then
                    grep '^hook_cost ' <<<"$out" | sed "s/^hook_cost /hook kind=cost rep=$rep ok=1 /" >>"$RES/hook.txt"
                else
                    echo "hook kind=cost build=$build rep=$rep ok=0 reason=exit $rc: $(tail -n1 "$RES/cell.err")" >>"$RES/hook.txt"
                fi
            done
            for mode in native hook; do
                bin=$BIN/hook_conns
                [ "$mode" = hook ] && bin=$HBIN/hook_conns
                log "hook conns, $mode, n=$HOOK_N, run $rep/$HOOK_REPS"
                out=$(timeout "$HOOK_TIMEOUT" "$bin" --mode "$mode" --n "$HOOK_N" --rounds "$HOOK_ROUNDS" 2>"$RES/cell.err")
                rc=$?
                line=$(grep -m1 '^hook_conns ' <<<"$out")
                if [ $rc -eq 0 ] && [ -n "$line" ]; then
                    echo "hook kind=conns rep=$rep ok=1 ${line#hook_conns }" >>"$RES/hook.txt"
                else
                    case $rc in
                        124) reason="killed after ${HOOK_TIMEOUT} s (timeout)" ;;
                        *) reason="exit $rc: $(grep -v '^ *$' "$RES/cell.err" | tail -n1 | cut -c1-200)" ;;
                    esac
                    echo "hook kind=conns mode=$mode rep=$rep ok=0 reason=$reason" >>"$RES/hook.txt"
                fi
            done
        done
        rm -f "$RES/cell.err"
    fi
fi

# ---------------------------------------------------------------- fan-out
# One measurement of runtime $1 in fan-out $2 (broadcast or skewed); appends
# a result line (ok=1) or a failure line (ok=0).
fanout_cell() {
    local rt=$1 b=$2 rep=$3 out err rc reason line size
    out=$RES/cell.out
    err=$RES/cell.err
    bench_cmd "$rt" fanout
    if [ "$b" = broadcast ]; then
        size=(--n "$FANOUT_VALUES" --receivers "$FANOUT_RECEIVERS")
    else
        size=(--n "$FANOUT_TASKS")
    fi
    timeout "$FANOUT_TIMEOUT" "${CMD[@]}" --bench "$b" "${size[@]}" >"$out" 2>"$err"
    rc=$?
    line=$(grep -m1 '^fanout ' "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        echo "fanout rep=$rep ok=1 ${line#fanout }" >>"$RES/fanout.txt"
        return 0
    fi
    reason=$(failure_reason "$rc" "$err" "$FANOUT_TIMEOUT" "without pausing")
    cp "$err" "$RES/failed-fanout-$rt-$b.err"
    echo "fanout rep=$rep ok=0 runtime=$rt bench=$b status=$rc reason=$reason" >>"$RES/fanout.txt"
    return 1
}

if want fanout; then
    skip=" "
    for rep in $(seq 1 "$FANOUT_REPS"); do
        log "fan-out run $rep/$FANOUT_REPS"
        for b in broadcast skewed; do
            if [ "$b" = broadcast ]; then
                rts=$(pick yieldloop tokio $GO_RUNS)
            else
                rts=$(pick yieldloop yieldloop-rr tokio $GO_RUNS)
            fi
            for rt in $rts; do
                case $skip in *" $rt/$b "*) continue ;; esac
                fanout_cell "$rt" "$b" "$rep" || skip="$skip$rt/$b "
            done
        done
    done
    rm -f "$RES/cell.out" "$RES/cell.err"
fi

# ---------------------------------------------------------------- before/after pairs
# Today's build against an older revision's (built by build_rev), for the
# diag and fairness stages: command "${@:3}" ITEM BUILD REP for each run
# REP of $1, each ITEM of the list $2 and BUILD = now and base, the pair
# back to back in the order in_turn gives (today first on odd runs), so
# that a drift of the machine falls on both and neither always goes first.
ab_pairs() {
    local reps=$1 items=$2 rep item build
    shift 2
    for rep in $(seq 1 "$reps"); do
        for item in $items; do
            for build in $(in_turn "$rep" now base); do
                "$@" "$item" "$build" "$rep"
            done
        done
    done
}

# The cells of such pairs, for stage $1 against the build in target/$2:
# hand-over benchmark $3, echo at $3 connections (server CPU per round
# trip), HTTP at $3 keep-alive connections (server CPU per request); $4 is
# the build (now or base) and $5 the run. Each appends a record of kind
# cost, echo or http (ok=1, or ok=0 with a reason) to $1.txt.
ab_handover() {
    local stage=$1 base=$2 b=$3 build=$4 rep=$5 line
    if [ "$build" = base ]; then bench_cmd "$base" handover; else bench_cmd yieldloop handover; fi
    log "$stage: hand-over $b, $build, pair $rep"
    line=$(timeout "$HANDOVER_TIMEOUT" "${CMD[@]}" --bench "$b" 2>"$RES/cell.err" | grep -m1 '^handover ')
    if [ -n "$line" ]; then
        echo "$stage kind=cost build=$build rep=$rep ok=1 ${line#handover }" >>"$RES/$stage.txt"
    else
        echo "$stage kind=cost build=$build bench=$b rep=$rep ok=0 reason=$(tail -n1 "$RES/cell.err")" >>"$RES/$stage.txt"
    fi
}
ab_echo() {
    local stage=$1 base=$2 conns=$3 build=$4 rep=$5 server=yieldloop
    [ "$build" = base ] && server=$base
    if echo_measure "echo_$server" "$conns" "$stage: echo, $conns connections, $build, pair $rep"; then
        echo "$stage kind=echo build=$build rep=$rep $ECHO_LINE ok=1" >>"$RES/$stage.txt"
    else
        echo "$stage kind=echo build=$build conns=$conns rep=$rep ok=0 reason=$ECHO_WHY" >>"$RES/$stage.txt"
    fi
}
ab_http() {
    local stage=$1 base=$2 conns=$3 build=$4 rep=$5 server=http_yieldloop
    [ "$build" = base ] && server=$base/http_yieldloop
    if http_measure "$server" "$conns" "$stage: http, $conns connections, $build, pair $rep"; then
        echo "$stage kind=http build=$build rep=$rep $HTTP_LINE ok=1" >>"$RES/$stage.txt"
    else
        echo "$stage kind=http build=$build conns=$conns rep=$rep ok=0 reason=$HTTP_WHY" >>"$RES/$stage.txt"
    fi
}

# ---------------------------------------------------------------- diag
# The task dump over N paused tasks; then, against the base revision, the
# hand-over benchmarks and the echo server's CPU per round trip at 64
# connections, each pair of runs in alternating order.
if want diag; then
    for rep in $(seq 1 "$DIAG_REPS"); do
        for n in $DIAG_NS; do
            log "diag: dump of $n tasks, run $rep/$DIAG_REPS"
            timeout "$DIAG_TIMEOUT" "$BIN/dump_time" --n "$n" >"$RES/cell.out" 2>"$RES/cell.err"
            rc=$?
            line=$(grep -m1 '^dump_time ' "$RES/cell.out")
            if [ $rc -eq 0 ] && [ -n "$line" ]; then
                echo "diag kind=dump rep=$rep ok=1 ${line#dump_time }" >>"$RES/diag.txt"
            else
                echo "diag kind=dump n=$n rep=$rep ok=0 reason=$(failure_reason "$rc" "$RES/cell.err" "$DIAG_TIMEOUT")" >>"$RES/diag.txt"
            fi
        done
    done
    if [ "$BASE_BUILD" != yes ]; then
        echo "diag kind=cost ok=0 skipped=1 reason=$BASE_BUILD" >>"$RES/diag.txt"
    else
        ab_pairs "$DIAG_AB_REPS" "yield spawn pingpong mutex" ab_handover diag base
        ab_pairs "$DIAG_ECHO_REPS" 64 ab_echo diag base
    fi
    rm -f "$RES/cell.out" "$RES/cell.err" "$RES/server.err" "$RES/client.err"
fi

# ---------------------------------------------------------------- fairness
# One scheduler thread hosting a task that floods (consumes a never-ending
# input as fast as it can: lines from a socket, 1 KiB reads, a local
# channel) beside an echo task, and a ping every 5 ms from a client on
# plain threads (bench/src/bin/fairness.rs, fairness_client.rs, and Go's
# `gobench fairness`); flood `none` is the baseline, pings alone. Servers
# of one thread are pinned like the echo servers, those of two workers
# (tokio-mt, Go with GOMAXPROCS=2) are not; the client is. Then what the
# per-task budget costs where nothing floods, against FAIR_BASE in pairs.

# One fairness run of runtime $1 with flood $2, run $3; appends a record
# (ok=1, or ok=0 with a reason) to fairness.txt.
fair_cell() {
    local rt=$1 flood=$2 rep=$3 pin=$PIN_SERVER stats out rc line reason i
    local what="fairness kind=run runtime=$rt flood=$flood rep=$rep"
    case $rt in tokio-mt | go-mt) pin="" ;; esac
    if ! PIN_SERVER=$pin start_server "fairness_$rt" --flood "$flood"; then
        echo "$what ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/fairness.txt"
        return 1
    fi
    # The server prints its stats port before its runtime starts.
    for i in $(seq 1 20); do
        stats=$(sed -n 's/^fairness stats=//p' "$RES/server.err" | head -n1)
        [ -n "$stats" ] && break
        sleep 0.1
    done
    if [ -z "$stats" ]; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        echo "$what ok=0 reason=the server printed no stats port" >>"$RES/fairness.txt"
        return 1
    fi
    log "fairness $rt flood=$flood run $rep/$FAIR_REPS ($addr)"
    # shellcheck disable=SC2086
    out=$(timeout "$FAIR_TIMEOUT" $PIN_CLIENT "$BIN/fairness_client" --addr "$addr" --stats "$stats" \
        --flood "$flood" --secs "$FAIR_SECS" 2>"$RES/client.err")
    rc=$?
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    line=$(grep -m1 '^fairness_client ' <<<"$out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        echo "fairness kind=run runtime=$rt rep=$rep ok=1 ${line#fairness_client }" >>"$RES/fairness.txt"
        return 0
    fi
    case $rc in
        124) reason="fairness_client killed after $FAIR_TIMEOUT s (timeout)" ;;
        *) reason="fairness_client exit $rc: $(grep -v '^ *$' "$RES/client.err" | tail -n1 | cut -c1-200)" ;;
    esac
    echo "$what ok=0 reason=$reason" >>"$RES/fairness.txt"
    return 1
}

if want fairness; then
    fair_rts=$(pick yieldloop tokio tokio-mt may $GO_RUNS ${GO_RUNS:+go-mt})
    for rep in $(seq 1 "$FAIR_REPS"); do
        for flood in none lines chunks chan; do
            # shellcheck disable=SC2086
            for rt in $(in_turn "$rep" $fair_rts); do
                if [ "$rt/$flood" = may/chan ]; then
                    [ "$rep" = 1 ] && echo "fairness kind=run runtime=may flood=chan rep=1 ok=1 na=1 reason=may 0.3 has no bounded channel (an unbounded one grows without end beside a producer that never pauses)" >>"$RES/fairness.txt"
                    continue
                fi
                fair_cell "$rt" "$flood" "$rep"
            done
        done
    done
    if [ "$FAIR_BUILD" != yes ]; then
        echo "fairness kind=cost ok=0 skipped=1 reason=$FAIR_BUILD" >>"$RES/fairness.txt"
    else
        ab_pairs "$FAIR_AB_REPS" "yield spawn pingpong mutex" ab_handover fairness fairbase
        ab_pairs "$FAIR_AB_REPS" "64 512" ab_echo fairness fairbase
        case $HTTP_LOAD in
            none*) echo "fairness kind=http ok=0 skipped=1 reason=${HTTP_LOAD#none }" >>"$RES/fairness.txt" ;;
            *) ab_pairs "$FAIR_AB_REPS" 64 ab_http fairness fairbase ;;
        esac
    fi
    rm -f "$RES/cell.err" "$RES/server.err" "$RES/client.err"
fi

# ---------------------------------------------------------------- recovery
# Redis clients under load while their server is killed (SIGKILL) and
# restarted on the same port (bench/src/bin/redis_recovery.rs): per route,
# the calls that failed and how soon after the restart one succeeded. The
# server of each run is new, started here as in the service stage; nothing
# is pinned.

# Whether 127.0.0.1:$1 accepts a connection.
accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Starts redis-server on port $1, logging to $2 (appended); sets $rpid.
# Returns 1 if it does not accept within 5 s.
recovery_redis() {
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --logfile '' >>"$2" 2>&1 &
    rpid=$!
    for _ in $(seq 1 500); do
        accepts "$1" && return 0
        kill -0 "$rpid" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# One run of route $1, rep $2; appends a result line (ok=1, with the
# times of the kill and the restart) or a failure line (ok=0).
recovery_cell() {
    local route=$1 rep=$2 what="recovery route=$1 rep=$2" out=$RES/cell.out err=$RES/cell.err
    local cpid rc line killed restarted reason
    # A port nothing listens on: the restart must reach this run's server.
    port=$((port + 1))
    while accepts "$port"; do port=$((port + 1)); done
    : >"$RES/redis.log"
    if ! recovery_redis "$port" "$RES/redis.log"; then
        kill "$rpid" 2>/dev/null
        wait "$rpid" 2>/dev/null
        echo "$what ok=0 reason=redis-server did not start: $(tail -n1 "$RES/redis.log")" >>"$RES/recovery.txt"
        return 1
    fi
    log "recovery $route run $rep/$RECOVERY_REPS (127.0.0.1:$port)"
    local bin=$BIN/redis_recovery
    [ "$route" = hook_pooled ] && bin=$HBIN/redis_recovery
    timeout $((${RECOVERY_SECS%.*} + 60)) "$bin" --route "$route" --addr "127.0.0.1:$port" \
        --secs "$RECOVERY_SECS" --tasks "$RECOVERY_TASKS" >"$out" 2>"$err" &
    cpid=$!
    sleep "$RECOVERY_KILL_AT"
    kill -KILL "$rpid" 2>/dev/null
    wait "$rpid" 2>/dev/null
    killed=$(date +%s.%N)
    accepts "$port" && killed=nan
    sleep "$RECOVERY_DOWN"
    # The restart's time is its start: how soon the server accepts is part
    # of what a client waits.
    restarted=$(date +%s.%N)
    recovery_redis "$port" "$RES/redis.log" || restarted=nan
    wait "$cpid"
    rc=$?
    kill "$rpid" 2>/dev/null
    wait "$rpid" 2>/dev/null
    line=$(grep -m1 '^redis_recovery ' "$out")
    if [ $rc -eq 0 ] && [ -n "$line" ] && [ "$restarted" != nan ] && [ "$killed" != nan ]; then
        echo "recovery rep=$rep ok=1 ${line#redis_recovery } killed_unix=$killed restarted_unix=$restarted" >>"$RES/recovery.txt"
        return 0
    fi
    if [ "$killed" = nan ]; then
        reason="127.0.0.1:$port still accepted connections after the kill"
    elif [ "$restarted" = nan ]; then
        reason="redis-server did not restart: $(tail -n1 "$RES/redis.log")"
    else
        reason=$(failure_reason "$rc" "$err" "$((${RECOVERY_SECS%.*} + 60))")
    fi
    echo "$what ok=0 reason=$reason" >>"$RES/recovery.txt"
    return 1
}

if want recovery; then
    if ! command -v redis-server >/dev/null; then
        log "recovery: skipped: redis-server not found"
        echo "recovery ok=0 skipped=1 reason=redis-server not found (apt-get install redis-server)" >>"$RES/recovery.txt"
    else
        routes="pooled multiplexed on_tokio hook_pooled"
        if [ "$HOOK_BUILD" != yes ]; then
            routes="pooled multiplexed on_tokio"
            echo "recovery route=hook_pooled ok=0 reason=$HOOK_BUILD" >>"$RES/recovery.txt"
        fi
        for rep in $(seq 1 "$RECOVERY_REPS"); do
            # shellcheck disable=SC2086
            for route in $(in_turn "$rep" $routes); do
                recovery_cell "$route" "$rep"
            done
        done
    fi
    rm -f "$RES/cell.out" "$RES/cell.err"
fi

# ---------------------------------------------------------------- attack
# The HTTP servers while attackers hold connections open
# (bench/src/bin/http_attack.rs): a large declared body with one byte of
# it sent, idle connections, pipelined requests whose answers are never
# read. Per run: a fresh server, one GET / (so that what a first answer
# touches is not counted as the attack's), VmRSS, the attackers connect
# and write, ATTACK_SETTLE s, VmRSS again, then the normal client for
# ATTACK_SECS while they hold, and once more when they have gone (the
# run's own unattacked rate, after_rps); attack "none" is the normal
# client alone on a fresh server.
# The half-open TLS handshake (the first 100 bytes of a ClientHello) goes
# to the TLS servers: hyper on yieldloop through with_hyper::serve_tls
# (yieldloop_tls) and hyper on tokio through tokio-rustls (hyper_tls), with
# a self-signed certificate made by openssl; without openssl, or with
# http_load as the client (it has no TLS), those runs are skipped.

# Resident memory of process $1 (kB).
vmrss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

# The normal client against $addr ($1: http or https): the HTTP stage's
# load generator over ATTACK_CLIENT_CONNS keep-alive connections of GET /.
# Sets LOAD_OUT to its fields and returns 0, or sets LOAD_WHY and returns 1.
attack_load() {
    local raw rc t=$((${ATTACK_SECS%.*} + 30))
    if [ "$HTTP_LOAD" = wrk ]; then
        # shellcheck disable=SC2086
        raw=$(timeout "$t" $PIN_CLIENT wrk -t1 -c "$ATTACK_CLIENT_CONNS" -d "${ATTACK_SECS}s" \
            --latency "$1://$addr/" 2>"$RES/client.err" 7>&-)
        rc=$?
        LOAD_OUT=$(printf '%s\n' "$raw" | parse_wrk "$ATTACK_CLIENT_CONNS") || { [ $rc -eq 0 ] && rc=1; }
    else
        # shellcheck disable=SC2086
        LOAD_OUT=$(timeout "$t" $PIN_CLIENT "$BIN/http_load" --addr "$addr" --conns "$ATTACK_CLIENT_CONNS" \
            --duration "$ATTACK_SECS" --warmup 0 2>"$RES/client.err" 7>&-)
        rc=$?
        LOAD_OUT=${LOAD_OUT#http_load }
    fi
    [ $rc -eq 0 ] && [ -n "$LOAD_OUT" ] && return 0
    case $rc in
        124) LOAD_WHY="$HTTP_LOAD killed after $t s (timeout)" ;;
        *) LOAD_WHY="$HTTP_LOAD exit $rc: $(tail -n1 "$RES/client.err")" ;;
    esac
    return 1
}

# The certificate and key of the TLS servers (made below).
ATTACK_TLS=$BENCH/target/attack-tls
# One run: server $1 (yieldloop, hyper, yieldloop_tls, hyper_tls), attack
# $2 (none, body, idle, pipeline, tls-hello), rep $3; appends a record to
# attack.txt.
attack_cell() {
    local server=$1 kind=$2 rep=$3 what="attack server=$1 kind=$2 rep=$3" scheme=http
    local n=0 r0 r1 apid="" ready="" done_line="" fifo=$RES/attack.fifo reason="" att extra=() sargs=()
    local during after=""
    case $server in
        yieldloop) sargs=(http_yieldloop) ;;
        hyper) sargs=(http_hyper --documented-limits) ;;
        yieldloop_tls) sargs=(http_hyper_yieldloop --tls "$ATTACK_TLS/cert.pem" "$ATTACK_TLS/key.pem") scheme=https ;;
        hyper_tls) sargs=(http_hyper --documented-limits --tls "$ATTACK_TLS/cert.pem" "$ATTACK_TLS/key.pem") scheme=https ;;
    esac
    if ! start_server "${sargs[@]}"; then
        echo "$what ok=0 reason=server did not start: $(tail -n1 "$RES/server.err")" >>"$RES/attack.txt"
        return 1
    fi
    log "attack $server $kind run $rep/$ATTACK_REPS ($addr)"
    curl -sk --max-time 5 -o /dev/null "$scheme://$addr/" 2>/dev/null
    sleep 0.2
    r0=$(vmrss_kb "$spid")
    if [ "$kind" != none ]; then
        case $kind in
            pipeline)
                n=$ATTACK_PIPE_CONNS
                extra=(--pipeline-bytes "$ATTACK_PIPE_BYTES" --path /page --rcvbuf "$ATTACK_PIPE_RCVBUF")
                ;;
            *) n=$ATTACK_CONNS ;;
        esac
        rm -f "$fifo"
        mkfifo "$fifo"
        # Emptied first: the wait below must not find the last run's line.
        : >"$RES/attack.out"
        # Opened for reading and writing, so that neither end waits for the
        # other; the attacker gets no copy of it (7>&-), so closing it here
        # ends the attacker's stdin.
        exec 7<>"$fifo"
        # shellcheck disable=SC2086
        $PIN_CLIENT "$BIN/http_attack" --addr "$addr" --kind "$kind" --conns "$n" "${extra[@]}" \
            <"$fifo" >"$RES/attack.out" 2>"$RES/attack.err" 7>&- &
        apid=$!
        for _ in $(seq 1 600); do
            ready=$(grep -m1 '^http_attack ready ' "$RES/attack.out")
            [ -n "$ready" ] && break
            kill -0 "$apid" 2>/dev/null || break
            sleep 0.1
        done
        if [ -z "$ready" ]; then
            reason="the attacker did not get ready: $(tail -n1 "$RES/attack.err")"
        else
            sleep "$ATTACK_SETTLE"
        fi
    fi
    r1=$(vmrss_kb "$spid")
    if [ -z "$reason" ] && ! attack_load "$scheme"; then
        reason=$LOAD_WHY
    fi
    if [ -n "$apid" ]; then
        exec 7>&-
        for _ in $(seq 1 300); do
            kill -0 "$apid" 2>/dev/null || break
            sleep 0.1
        done
        kill "$apid" 2>/dev/null
        wait "$apid" 2>/dev/null
        done_line=$(grep -m1 '^http_attack done ' "$RES/attack.out")
        if [ -z "$reason" ] && [ -z "$done_line" ]; then
            reason="the attacker did not finish: $(tail -n1 "$RES/attack.err")"
        fi
        # The same client once more on the same server, the attackers gone
        # (1 s for the server to see their connections close): the run's
        # own unattacked rate, measured seconds after the attacked one, so
        # that the pair sees the machine in one state.
        during=$LOAD_OUT
        sleep 1
        if [ -z "$reason" ] && attack_load "$scheme"; then
            after="after_rps=$(grep -o 'rps=[0-9.]*' <<<"$LOAD_OUT" | head -n1 | cut -d= -f2)"
            after="$after after_p99_us=$(grep -o 'p99_us=[0-9.]*' <<<"$LOAD_OUT" | cut -d= -f2)"
        elif [ -z "$reason" ]; then
            reason="after the attack: $LOAD_WHY"
        fi
        LOAD_OUT=$during
    fi
    if [ -z "$reason" ] && ! kill -0 "$spid" 2>/dev/null; then
        reason="the server died: $(tail -n1 "$RES/server.err")"
    fi
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    if [ -n "$reason" ] || [ -z "$r0" ] || [ -z "$r1" ]; then
        echo "$what ok=0 reason=${reason:-VmRSS not read}" >>"$RES/attack.txt"
        return 1
    fi
    att="attackers=0 connected=0"
    if [ -n "$done_line" ]; then
        att="attackers=$n $(grep -o 'connected=[0-9]* failed=[0-9]* bytes_per_conn=[0-9]*' <<<"$ready")"
        att="$att $(grep -o 'closed_by_server=[0-9]* answered_bytes=[0-9]*' <<<"$done_line")"
    fi
    echo "attack server=$server kind=$kind rep=$rep $att rss0_kb=$r0 rss1_kb=$r1 nofile=$(ulimit -n) load=$HTTP_LOAD $LOAD_OUT${after:+ $after} ok=1" >>"$RES/attack.txt"
}

if want attack; then
    case $HTTP_LOAD in
        none*)
            why=${HTTP_LOAD#none (}
            log "attack: skipped: ${why%)}"
            echo "attack ok=0 skipped=1 reason=${why%)}" >>"$RES/attack.txt"
            ;;
        *)
            # A subshell: a limit on open files raised for the servers and
            # the attackers ends with the stage.
            (
                need=$(((ATTACK_CONNS > ATTACK_PIPE_CONNS ? ATTACK_CONNS : ATTACK_PIPE_CONNS) + ATTACK_CLIENT_CONNS + 256))
                if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
                    ulimit -n "$need" 2>/dev/null ||
                        log "note: attack: ulimit -n $need failed (hard limit $(ulimit -Hn)); runs may fail"
                fi
                tls=""
                if [ "$HTTP_LOAD" != wrk ]; then
                    tls="$HTTP_LOAD has no TLS"
                elif ! command -v openssl >/dev/null; then
                    tls="openssl not found, so no certificate"
                elif ! mkdir -p "$ATTACK_TLS" || ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
                    -nodes -keyout "$ATTACK_TLS/key.pem" -out "$ATTACK_TLS/cert.pem" -days 30 -subj /CN=localhost \
                    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>"$RES/client.err"; then
                    tls="openssl req failed: $(tail -n1 "$RES/client.err")"
                fi
                if [ -n "$tls" ]; then
                    log "note: attack: no TLS runs: $tls"
                    echo "attack kind=tls-hello ok=0 skipped=1 reason=$tls" >>"$RES/attack.txt"
                fi
                for rep in $(seq 1 "$ATTACK_REPS"); do
                    for server in $(in_turn "$rep" yieldloop hyper); do
                        for kind in $(in_turn "$rep" none body idle pipeline); do
                            attack_cell "$server" "$kind" "$rep"
                        done
                    done
                    [ -z "$tls" ] || continue
                    for server in $(in_turn "$rep" yieldloop_tls hyper_tls); do
                        for kind in $(in_turn "$rep" none tls-hello); do
                            attack_cell "$server" "$kind" "$rep"
                        done
                    done
                done
            )
            rm -f "$RES/attack.fifo" "$RES/attack.out" "$RES/attack.err" "$RES/server.err" "$RES/client.err"
            ;;
    esac
fi

# ---------------------------------------------------------------- report
{
    echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "total_s=$(elapsed)"
} >>"$RES/meta.txt"
log "writing $OUT_MD and $OUT_SVG"
"$BIN/report" --results "$RES" --md "$OUT_MD" --svg "$OUT_SVG"
log "done"

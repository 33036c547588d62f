#!/usr/bin/env bash
# Builds the comparison benchmarks (bench/, its own crate) and yieldloop's
# echo_server and echo_load examples in release mode, runs the cells of
# bench/cells.txt stage by stage, each measurement in a process of its own
# (a crash or an out-of-memory kill only marks that cell failed), and writes
# docs/benchmarks.md and docs/src/img/sleepers.svg from the raw results in
# bench/results/. All network load goes to 127.0.0.1, bounded in connections
# and time. Nothing here asserts: it measures and reports.
#
# Go, the stackful peer, is built from bench/go where the go tool is
# (apt-get install golang-go). What a stage needs and does not find (wrk,
# h2load: apt-get install nghttp2-client, redis-server: apt-get install
# redis-server, PostgreSQL, chrt's SCHED_FIFO, the build with feature hook,
# an older revision) skips it or its cells, with a record saying why.
#
#   bench/run.sh
#
# Knobs, by stage (environment variables; run.sh reads their defaults, in
# brackets, from here):
#   sleepers: REPS [5] runs per cell for N <= 10,000, REPS_100K [3] for N = 100,000,
#     REPS_1M [3] for N = 1,000,000, REPS_1M_ASYNCIO [1] for asyncio there (40-90 s a run)
#   echo: ECHO_REPS [5] runs per cell, ECHO_SECS [3] measured seconds per run after ECHO_WARMUP [0.5]
#   sleepers: CELL_TIMEOUT [180] seconds before a run is killed and marked failed;
#     SLEEPERS_NS ["1 1000 10000 100000 1000000"] task counts (for quick trials);
#     WARMUP [1]: a discarded run of each runtime before the cells of N >= 100,000 (0: none);
#     PRETOUCH [1]: before each run there, touch and free as much memory as the hungriest
#     warm-up run held (0: none); FIRSTTOUCH_MAX_MB [12288] most MiB the first-touch
#     measurement touches looking for cold memory (at most half of MemAvailable), after
#     FIRSTTOUCH_SETTLE [5] seconds
#   handover, xmutex: HANDOVER_REPS [5] runs per cell
#   fanout (two workers): FANOUT_REPS [3] runs per cell; FANOUT_VALUES [100000] values the
#     broadcast sends to FANOUT_RECEIVERS [1000] receivers; FANOUT_TASKS [10000] tasks of the
#     skewed one; FANOUT_TIMEOUT [120] seconds before a run is killed and marked failed
#   handover, xmutex: HANDOVER_TIMEOUT [60] the same
#   lateness: LATENESS_REPS [5] runs per cell (runtime x priority), LATENESS_TASKS [1000]
#     sleeping tasks per run, LATENESS_MAX_MS [50] largest random delay (ms) of a task,
#     LATENESS_TIMEOUT [30] seconds before a run is killed
#   http: HTTP_REPS [3] runs per cell (server x keep-alive connections), HTTP_SECS [3]
#     measured seconds per run (whole seconds for wrk; killed 30 s later) after
#     HTTP_WARMUP [0.5] (http_load only); HTTP_LOADGEN [auto] the load generator of the
#     http, service, attack and fairness stages: wrk, http_load (ours), or auto: wrk if installed
#   http2: HTTP2_REPS [5] runs per server (the two in turn), HTTP2_N [300000] requests per
#     measured h2load run (after HTTP2_WARMUP_N [30000]) over HTTP2_CONNS [4], HTTP2_STREAMS [16]
#     connections and streams per connection (h2load's -c, -m), HTTP2_TIMEOUT [120] s to its kill
#   scaling: SCALE_REPS [5] runs per cell (client threads x workers), SCALE_SECS [4] measured
#     seconds per run (killed 30 s later)
#   db: DB_REPS [5] runs per ticker cell; DB_RT_REPS [15] per round-trip cell (where the kernel
#     puts the client relative to the server moves a run's figures); DB_N [10000] measured
#     queries per round-trip run after DB_WARMUP [1000]; DB_TASKS [50] tasks waiting on the
#     database per ticker run, each for DB_WAIT_MS [200] (BLPOP timeout, pg_sleep);
#     DB_TIMEOUT [120] seconds before a run is killed; DB_PAIRS [120] pairs of batches of
#     DB_BATCH [300] queries per interleaved comparison (db_roundtrip --vs);
#     DB_TOKIO_WORKERS [""] workers of on_tokio's runtime (and tokio_hop's; empty: one)
#   service (the example service's Redis endpoint): SERVICE_REPS [11] runs per cell
#   hook: HOOK_REPS [3] runs per cell (builds, modes in turn), HOOK_ITERS [100000] calls per
#     timed batch of hook_cost, HOOK_BATCHES [31] such batches per call and way, HOOK_N [10000]
#     tasks, each with a connection, per hook_conns run of HOOK_ROUNDS [20] round trips each,
#     HOOK_TIMEOUT [300] seconds before a run is killed
#   diag: DIAG_REPS [3] runs per task-dump cell of DIAG_NS ["10000 100000"] paused tasks;
#     DIAG_BASE [eb90bd2] the revision without the task dump and the counters, measured
#     against today's in DIAG_AB_REPS [9] alternating pairs per hand-over benchmark and
#     DIAG_ECHO_REPS [5] of echo runs; DIAG_TIMEOUT [300] seconds before a run is killed
#   fairness: FAIR_REPS [3] runs per cell (runtime x flood), FAIR_SECS [2] seconds of pings
#     per run, FAIR_TIMEOUT [30] seconds before its client is killed; FAIR_BASE [6e8ff4a] the
#     revision before the per-task budget, measured against today's in FAIR_AB_REPS [9]
#     alternating pairs per benchmark
#   recovery: RECOVERY_REPS [3] runs per route, RECOVERY_SECS [5] seconds of load per run,
#     the server killed RECOVERY_KILL_AT [1.5] s into it and down RECOVERY_DOWN [1] s,
#     RECOVERY_TASKS [50] tasks sending commands
#   attack: ATTACK_REPS [5] runs per cell (server x attack); ATTACK_CONNS [1000] attacking
#     connections (large-body and idle attacks), ATTACK_PIPE_CONNS [200] of the pipelining
#     attack, each sending ATTACK_PIPE_BYTES [8192] bytes of GET /page (4 KiB answers) never
#     reading one, ATTACK_PIPE_RCVBUF [4096] the SO_RCVBUF of their sockets (so that answers
#     pile up in the server, not in the kernel); ATTACK_SETTLE [2] seconds from the attackers'
#     connecting to reading the server's memory; ATTACK_SECS [3] seconds of the normal client
#     (whole, for wrk) over ATTACK_CLIENT_CONNS [64] keep-alive connections
#   STAGES ["handover xmutex lateness sleepers echo syscalls http http2 scaling service db hook fanout diag fairness recovery attack"]
#     the stages to run (for trials: the report marks the others not run)
#   RUNTIMES [all] the runtimes of the sleepers, hand-over, lateness, echo, syscalls and
#     fairness stages, e.g. "yieldloop floor go": yieldloop tokio may mio go threads floor
#     asyncio (and yieldloop-rr, the fan-out's round-robin placement; tokio-mt and go-mt,
#     the fairness stage's two workers)
#   OUT_MD [docs/benchmarks.md], OUT_SVG [docs/src/img/sleepers.svg] where the report and the
#     sleepers plot go (relative to the root)
# shellcheck disable=SC2034,SC2153 # the knobs are set from this list, and bench/cells.txt reads variables
set -uo pipefail

# The knobs' defaults, from the list above; meta.txt keeps every knob but
# these (HTTP/2's are in http2.txt, the load generator shows as http_load).
NOT_IN_META="HTTP_LOADGEN HTTP2_REPS HTTP2_N HTTP2_WARMUP_N HTTP2_CONNS HTTP2_STREAMS HTTP2_TIMEOUT OUT_MD OUT_SVG"
KNOBS=()
while read -r knob value; do
    KNOBS+=("$knob")
    [ -n "${!knob:-}" ] || printf -v "$knob" '%s' "$value"
done < <(sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | grep -o '[A-Z][A-Z0-9_]* \[[^]]*\]' | sed 's/ \["\{0,1\}\([^]"]*\)"\{0,1\}\]$/ \1/')

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
RES=$BENCH/results
BIN=$BENCH/target/release
HBIN=$BENCH/target/hook/release # feature hook, a target dir of its own
EX=$ROOT/target/release/examples
GO_BIN=$BENCH/target/go/gobench
TLS=$BENCH/target/attack-tls # the attack stage's certificate and key
declare -A BASE_DIR=([diag]=base [fairness]=fairbase) # each stage's build `base` (build_rev)
declare -A VS=([native]=tokio [on_tokio]=tokio_hop)   # the db stage's interleaved comparisons
START=$(date +%s.%N)
export RUST_BACKTRACE=0
want() { [[ " $STAGES " == *" $1 "* ]]; }
elapsed() { awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
log() { printf '[%6ss] %s\n' "$(elapsed)" "$*" >&2; }
fail() { echo "run.sh: $1 failed" >&2 && exit 1; }

# ---------------------------------------------------------------- builds
cd "$BENCH" || exit 1
log "building (release)"
cargo build --release --quiet --bins || fail "the build"
# Handover with feature tracing (no subscriber), for what the feature costs.
! want handover || CARGO_TARGET_DIR=$BENCH/target/tracing cargo build --release --quiet --features tracing --bin handover ||
    fail "the build of handover with the tracing feature"
! want scaling || (cd "$ROOT" && cargo build --release --quiet --example echo_server --example echo_load) ||
    fail "the build of the echo_server and echo_load examples"
HOOK_BUILD=no # if its build fails, only what needs it is skipped
if want hook || want service || want recovery; then
    HOOK_BUILD=yes
    cargo build --release --quiet --features hook --target-dir "$BENCH/target/hook" --bin service_hook --bin hook_cost \
        --bin hook_conns --bin redis_recovery 2>"$BENCH/target/hook-build.err" ||
        HOOK_BUILD="no (the build with --features hook failed: $(grep -m1 '^error' "$BENCH/target/hook-build.err" | cut -c1-160))"
    [ "$HOOK_BUILD" = yes ] || log "note: $HOOK_BUILD"
fi
# Revision $1 (git archive into target/$2/src), its bench binaries "${@:3}" built in a
# target dir all such builds share (target/revs: common dependencies built once) and
# copied to target/$2/release. Prints "yes", or "no (why)", which skips the comparison.
build_rev() {
    local rev=$1 name=$2 src=$BENCH/target/$2/src err=$BENCH/target/$2-build.err b bins=() why=""
    shift 2
    for b; do bins+=(--bin "$b"); done
    rm -rf "$src" && mkdir -p "$src" "$BENCH/target/$name/release"
    if ! git -C "$ROOT" archive "$rev" 2>"$err" | tar -x -C "$src" 2>>"$err"; then
        why="git archive $rev failed: $(grep -m1 . "$err" | cut -c1-160)"
    elif ! (cd "$src/bench" && CARGO_TARGET_DIR=$BENCH/target/revs cargo build --release --quiet "${bins[@]}") 2>>"$err"; then
        why="the build of $rev failed: $(grep -m1 '^error' "$err" | cut -c1-160)"
    else
        for b; do cp "$BENCH/target/revs/release/$b" "$BENCH/target/$name/release/" 2>>"$err" || why="copying $b of $rev failed"; done
    fi
    [ -n "$why" ] || { echo yes && return; }
    log "note: the build of $rev for the $name comparison: $why" && echo "no ($why)"
}
BASE_BUILD=no FAIR_BUILD=no
! want diag || BASE_BUILD=$(build_rev "$DIAG_BASE" base handover echo_yieldloop)
! want fairness || FAIR_BUILD=$(build_rev "$FAIR_BASE" fairbase handover echo_yieldloop http_yieldloop)
GO_RUNS="" GO_VERSION="missing (go not found)" # go: Go's cells run
if ! command -v go >/dev/null; then
    log "note: go not found, so Go is not measured (apt-get install golang-go)"
elif (cd "$BENCH/go" && GOPROXY=off GOFLAGS='' go build -o "$GO_BIN" .); then
    GO_VERSION=$(go version | sed 's/^go version //') GO_RUNS=go
else
    GO_VERSION="missing (go build in bench/go failed)" && log "note: go build in bench/go failed, so Go is not measured"
fi
BUILD_S=$(elapsed)

# ---------------------------------------------------------------- this machine
case $OUT_MD in /*) ;; *) OUT_MD=$ROOT/$OUT_MD ;; esac
case $OUT_SVG in /*) ;; *) OUT_SVG=$ROOT/$OUT_SVG ;; esac
mkdir -p "$RES" "$(dirname "$OUT_MD")" "$(dirname "$OUT_SVG")"
# All but http2.txt, which the report reads until its stage runs again.
find "$RES" -maxdepth 1 \( -name '*.err' -o -name '*.txt' ! -name http2.txt \) -delete
CORES=$(nproc)
PIN_SERVER="" PIN_CLIENT="" # servers on one core, clients on another
command -v taskset >/dev/null && [ "$CORES" -ge 2 ] && PIN_SERVER="taskset -c 0" PIN_CLIENT="taskset -c 1"
read -ra PINS <<<"$PIN_SERVER"
read -ra PINC <<<"$PIN_CLIENT"
secs() { awk -v s="$1" -v w="${2:-0}" 'BEGIN { printf "%d", s + w + 30.999 }'; } # a client's timeout
HTTP_TIMEOUT=$(secs "$HTTP_SECS" "$HTTP_WARMUP") ECHO_TIMEOUT=$(secs "$ECHO_SECS" "$ECHO_WARMUP") SCALE_TIMEOUT=$(secs "$SCALE_SECS")
case $HTTP_LOADGEN/$(command -v wrk >/dev/null && echo wrk) in
    auto/wrk | wrk/wrk) HTTP_LOAD=wrk HTTP_LOAD_VERSION=$(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2) ;;
    auto/ | http_load/*) HTTP_LOAD=http_load HTTP_LOAD_VERSION="http_load (bench/src/bin/http_load.rs)" ;;
    wrk/) HTTP_LOAD="none (HTTP_LOADGEN=wrk but wrk is not installed)" ;;
    *) HTTP_LOAD="none (unknown HTTP_LOADGEN=$HTTP_LOADGEN)" ;;
esac
[[ $HTTP_LOAD != wrk || $HTTP_SECS =~ ^[0-9]+$ ]] || HTTP_LOAD="none (wrk needs whole seconds, HTTP_SECS=$HTTP_SECS)"
[[ $HTTP_LOAD != none* ]] || HTTP_LOAD_VERSION=$HTTP_LOAD
PY=$(command -v python3 >/dev/null && echo python3)
PRIORITIES=normal LATENESS_RT="no (chrt not found)" # realtime only where chrt gives SCHED_FIFO
if command -v chrt >/dev/null && chrt -f 50 true 2>/dev/null; then
    PRIORITIES=normal,rt LATENESS_RT=yes
elif command -v chrt >/dev/null; then
    LATENESS_RT="no (chrt -f 50 failed as $(id -un): $(chrt -f 50 true 2>&1 | tail -n1 | cut -c1-120))"
fi
prio() { [ "$1" != rt ] || echo chrt -f 50; }
{
    printf '%s\n' "date=$(date -u '+%Y-%m-%d %H:%M UTC')" "kernel=$(uname -sr)" "cores=$CORES" "rustc=$(rustc --version)" \
        "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" "clk_tck=$(getconf CLK_TCK)" \
        "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)" "load_start=$(cut -d' ' -f1-3 /proc/loadavg)" \
        "max_map_count=$(cat /proc/sys/vm/max_map_count 2>/dev/null)" "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
    [ -n "$PY" ] && echo "python=$($PY --version 2>&1)"
    echo "yieldloop=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$([ -z "$(git -C "$ROOT" status --porcelain -- src Cargo.toml 2>/dev/null)" ] ||
        echo " (with uncommitted changes in src/ or Cargo.toml)")"
    echo "versions=$(awk '/^name = "(tokio|may|mio|hyper|plotters|redis)"$/ {n=$3} /^version/ && n {gsub(/"/,"",n); gsub(/"/,"",$3); printf "%s %s, ", n, $3; n=""}' "$BENCH/Cargo.lock" | sed 's/, $//')"
    printf '%s\n' "pin_server=${PIN_SERVER:-none}" "pin_client=${PIN_CLIENT:-none}" "lateness_rt=$LATENESS_RT" "hook_build=$HOOK_BUILD" \
        "diag_base_build=$BASE_BUILD" "fair_base_build=$FAIR_BUILD" "http_load=$HTTP_LOAD" "http_load_version=$HTTP_LOAD_VERSION" \
        "redis_version=$(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p')" "build_s=$BUILD_S" "go=$GO_VERSION"
    for knob in "${KNOBS[@]}"; do [[ " $NOT_IN_META " == *" $knob "* ]] || echo "${knob,,}=${!knob:-default}"; done
} >"$RES/meta.txt"
# The command lines, for the report: bench/commands.in, but its lines marked [-], those of the
# load generator not used and, without it, Go's.
drop="-|$([ "$HTTP_LOAD" = wrk ] && echo http_load || echo wrk)$([ -n "$GO_RUNS" ] || echo '|go')"
eval "cat <<EOF
$(grep -Ev "^\[($drop)\] " "$BENCH/commands.in" | sed 's/^\[[a-z_]*\] //')
EOF" >"$RES/commands.txt"

# ---------------------------------------------------------------- the runner
# Runs stage $1: its rows of bench/cells.txt (which says what they are),
# then those of each of its parts (STAGE:PART), part by part.
run_stage() {
    local group
    for group in $(awk -v s="$1" '/^[^ #]/ && ($1 == s || index($1, s ":") == 1) { print $1 }' "$BENCH/cells.txt" | uniq); do run_group "$group"; done
    rm -f "$RES/cell.out" "$RES/cell.err" "$RES/server.err"
}
# Runs group $1's rows: run 1 of each, then run 2 and so on. A row whose condition does not
# hold is skipped with a record (and the flag's tags); the next skipped for that reason writes none.
run_group() {
    local row rows=() kept=() flag flags why said="" rep=0 ran=1
    STAGE=${1%%:*} DROPPED="|"
    mapfile -t rows < <(awk -v g="$1" '/^#/ { next } /^[^ ]/ { if (r) print r; r = ($1 == g) ? $0 " |" : ""; next }
        r { sub(/^ +/, ""); r = r " " $0 } END { if (r) print r }' "$BENCH/cells.txt")
    for row in "${rows[@]}"; do
        read -r _ _ flags _ <<<"$row"
        for flag in ${flags//,/ }; do
            why=$(lacks "${flag%%:*}")
            [ -n "$why" ] || continue
            [ "$why" = "$said" ] || { log "$STAGE: skipped: $why" && echo "$STAGE $(sed -n 's/^[^:]*:\(.*\)/\1 /p' <<<"$flag")ok=0 skipped=1 reason=$why" >>"$RES/$STAGE.txt"; }
            said=$why
            continue 2
        done
        kept+=("$row")
    done
    while [ $ran = 1 ]; do
        rep=$((rep + 1)) ran=0
        for row in "${kept[@]}"; do run_row "$rep" "$row" && ran=1; done
    done
}
# Why condition $1 of a row does not hold here (nothing if it does).
lacks() {
    local why
    case $1 in
        load) [[ $HTTP_LOAD != none* ]] || { why=${HTTP_LOAD#none (} && echo "${why%)}"; } ;;
        h2load) command -v h2load >/dev/null || echo "h2load not found (apt-get install nghttp2-client)" ;;
        redis) command -v redis-server >/dev/null || echo "redis-server not found (apt-get install redis-server)" ;;
        hook | base | fair) why=${1^^}_BUILD; [ "${!why}" = yes ] || echo "${!why}" ;;
    esac
}
# Runs row $2's cells of run $1 in the order its axes give; fails if the row has no run $1.
# A cell that does not apply (or failed, with flag once) is left out of later runs.
run_row() {
    local rep=$1 runs flags axes cmd=${2#* |} axis name vals v c i k lineup=() combos=("") next TAGS tags
    read -r _ runs flags axes <<<"${2%% |*}"
    eval "runs=$runs"
    [ "$rep" -le "$runs" ] || return 1
    set -f && eval "set -- $axes" && set +f
    for axis; do
        name=${axis%%[=~@]*} next=()
        IFS=, read -ra vals <<<"${axis:${#name}+1}"
        [[ $axis == "$name~"* ]] && ((rep % 2 == 0 && ${#vals[@]})) && mapfile -t vals < <(printf '%s\n' "${vals[@]}" | tac)
        for c in "${combos[@]}"; do for v in "${vals[@]}"; do next+=("$c $name=$v"); done; done
        combos=("${next[@]}")
    done
    for c in "${combos[@]}"; do [[ $DROPPED == *"|$c|"* ]] || lineup+=("$c"); done
    k=${#lineup[@]}
    for ((i = 0; i < k; i++)); do
        c=${lineup[i]} TAGS=${lineup[i]# }
        [[ $axes == *@* ]] && c=${lineup[(i + rep - 1) % k]} && TAGS="${c# } order=$((i + 1))"
        read -ra tags <<<"$TAGS"
        local "${tags[@]}"
        one_cell "$cmd" "$rep" "$runs"
        case $?/$flags in 2/* | 1/*once*) DROPPED+="$c|" ;; esac
    done
}
# Runs cell command $1 (run $2 of $3); appends to $RES/${4:-STAGE}.txt, per line of OUT,
# "STAGE TAGS rep= ok=1 OUT" (but the tags OUT has), or "STAGE TAGS rep= ok=0 status=
# reason=WHY". Returns 0, 1 if the cell failed, 2 if it does not apply (na=1).
one_cell() {
    local cmd=$1 rep=$2 file=$RES/${4:-$STAGE}.txt OUT="" WHY="" rc line t head
    log "$STAGE $TAGS, run $rep/$3"
    rm -f "$RES/cell.err"
    eval "$cmd"
    rc=$?
    if [ $rc != 0 ]; then
        [ -s "$RES/cell.err" ] && cp "$RES/cell.err" "$RES/failed-$STAGE-${TAGS// /-}.err"
        echo "$STAGE $TAGS rep=$rep ok=0 status=$rc reason=${WHY:-exit status $rc}" >>"$file"
        return 1
    fi
    while IFS= read -r line; do
        head=""
        for t in $TAGS; do [[ " $line" == *" ${t%%=*}="* ]] || head+=" $t"; done
        echo "$STAGE$head rep=$rep ok=1 $line" >>"$file"
    done <<<"$OUT"
    [[ " $OUT" != *" na=1"* ]] || return 2
}
# The program that runs $2 (a runtime, a server, build now or base) in stage $1, from the
# programs of bench/cells.txt, into the array P; NOPIN=1 for one marked nopin.
prog() {
    local pattern flag words
    while read -r _ pattern flag words; do
        # shellcheck disable=SC2254 # the patterns are globs
        case $1/${2/#now/yieldloop} in $pattern) ;; *) continue ;; esac
        [ "$flag" != hook ] || [ "$HOOK_BUILD" = yes ] || { WHY=$HOOK_BUILD && return 1; }
        [ "$flag" != nopin ] || NOPIN=1
        set -- "$1" "${2/#now/yieldloop}"
        eval "P=($words)" && return 0
    done < <(grep '^program ' "$BENCH/cells.txt")
}
# The words "$@" into the array CMD, each @STAGE:WHO as prog gives it.
resolve() {
    local w
    CMD=()
    for w; do
        [[ $w == @*:* ]] || { CMD+=("$w") && continue; }
        w=${w#@} && prog "${w%%:*}" "${w#*:}" && CMD+=("${P[@]}") || return 1
    done
}

# ---------------------------------------------------------------- cells
# Cell or client: program "${@:3}" (words as for resolve) in WRAP, if set, under a timeout of
# $2 s. OUT: its lines that start with word $1, less the word (-NAME: none needed; NAME in WHY).
run() {
    local word=$1 t=$2 rc
    shift 2
    resolve "$@" || return 1
    "${WRAP[@]}" timeout "$t" "${CMD[@]}" >"$RES/cell.out" 2>"$RES/cell.err" 7>&-
    rc=$?
    OUT=$(sed -n "s/^$word //p" "$RES/cell.out")
    [ $rc = 0 ] && { [[ $word == -* ]] || [ -n "$OUT" ]; } && return 0
    WHY="${word#-}: $(case $rc in
        124) echo "killed after $t s (timeout)" ;;
        137) echo "killed by SIGKILL (out of memory?)" ;;
        0) echo "no record in its output" ;;
        *) echo "exit $rc: $(grep -Ev '^note:|^ *$|without pausing' "$RES/cell.err" | tail -n 1 | tr -d '\r' | cut -c1-200)" ;;
    esac)"
    return $((rc ? rc : 1))
}
WRAP=()
# Cell: server "${@:1:-- }" (words as for resolve, then --addr) on a free port, and the client
# after -- (a function below) against it. OUT: the server's CPU over the client's run (user and
# system ticks, /proc/PID/stat; every thread's time on CPU, schedstat; read again 0.2 s after
# the client exits), then the client's fields.
serve() {
    local srv=() u0 s0 c0 u1 s1 c1 rc
    while [ "$1" != -- ]; do srv+=("$1") && shift; done
    shift
    start_server "${srv[@]}" || return 1
    mark
    "$@"
    rc=$?
    sleep 0.2
    read -r u1 s1 c1 < <(cpu "$spid")
    [ $rc != 0 ] || kill -0 "$spid" 2>/dev/null || { WHY="the server died: $(tail -n1 "$RES/server.err")" && rc=1; }
    stop_server
    [ $rc = 0 ] && OUT="utime=$((u1 - u0)) stime=$((s1 - s0)) oncpu_ns=$((c1 - c0)) $OUT"
}
# Where the server's CPU reading starts (a client may move it on).
mark() { read -r u0 s0 c0 < <(cpu "$spid"); }
# Process $1's user and system ticks, and every thread's nanoseconds on CPU.
cpu() {
    local f a total=0
    for f in /proc/"$1"/task/*/schedstat; do read -r a _ <"$f" 2>/dev/null && total=$((total + a)); done
    echo "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12, $13}') $total"
}
# Server ports are below the ephemeral range: a client socket left in
# TIME_WAIT on an ephemeral port would otherwise make the bind fail.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_lo=32768
port=$((eph_lo > 21000 ? 21000 : 1024 + 2000))
# Starts server "$@" --addr on a free port (trying a few), pinned unless NOPIN, and waits up
# to 2 s until it accepts, or with READY set prints such a line on stderr. Sets spid and addr, or WHY.
start_server() {
    local pin=("${PINS[@]}") NOPIN=${NOPIN:-}
    resolve "$@" || return 1
    [ -z "$NOPIN" ] || pin=()
    for _ in 1 2 3 4 5; do
        port=$((port + 1)) && addr=127.0.0.1:$port
        "${pin[@]}" "${CMD[@]}" --addr "$addr" 2>"$RES/server.err" &
        spid=$!
        sleep 0.2
        for _ in $(seq 1 20); do { ready || ! kill -0 "$spid" 2>/dev/null; } && break; sleep 0.1; done
        kill -0 "$spid" 2>/dev/null && ready && return 0
        kill -KILL "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
    done
    WHY="server did not start: $(tail -n1 "$RES/server.err")"
    return 1
}
ready() { if [ -n "${READY:-}" ]; then grep -q "$READY" "$RES/server.err"; else accepts "$port"; fi; }
# Stops the server with signal STOP (TERM), and SIGKILL 5 s later.
stop_server() {
    kill -"${STOP:-TERM}" "$spid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$spid" 2>/dev/null && sleep 0.1; done
    kill -KILL "$spid" 2>/dev/null && log "$STAGE: server $spid still there 5 s after SIG${STOP:-TERM}: killed"
    wait "$spid" 2>/dev/null
}
# Cell wrapper: na=1 (reason $2) where the tags include all of $1; else the cell "${@:3}".
na_if() {
    local t
    for t in $1; do [[ " $TAGS " == *" $t "* ]] || { "${@:3}"; return; }; done
    OUT="na=1 reason=$2"
}
# Cell wrapper: database $1's server pinned to the client's core (placement $2: one) or not (split).
pin_db() {
    local rc
    taskset -a -p -c "$([ "$2" = split ] && echo 1 || echo 0)" "${DB_PID[$1]:-none}" >/dev/null 2>&1 || { WHY="taskset could not pin the server" && return 1; }
    "${@:3}"
    rc=$?
    taskset -a -p -c "0-$((CORES - 1))" "${DB_PID[$1]}" >/dev/null 2>&1
    return $rc
}
# Cell: runtime $1 at N = $2 under rusage (its CPU time, page faults), after a pre-touch of TOUCH_MB MiB.
sleeper() {
    local WRAP=("$BIN/rusage" -o "$RES/cell.ru" --)
    [ -z "$TOUCH_MB" ] || "$BIN/firsttouch" --pretouch --mb "$TOUCH_MB" 2>>"$RES/pretouch.err" ||
        log "note: pre-touch of $TOUCH_MB MiB failed (see pretouch.err)"
    rm -f "$RES/cell.ru"
    run sleepers "$CELL_TIMEOUT" "@sleepers:$1" --n "$2" && OUT+=" $(cat "$RES/cell.ru" 2>/dev/null)"
}
# Cell: Redis clients (bench/src/bin/redis_recovery.rs, route $1) under load while their server,
# new for the run, is killed RECOVERY_KILL_AT s in and restarted RECOVERY_DOWN s later on the same
# port. OUT: the client's fields, the times of the kill and of the restart (its start: how soon
# the server accepts is part of what a client waits).
recover() {
    local cpid rc killed restarted t=$((${RECOVERY_SECS%.*} + 60))
    prog redis_recovery "$1" || return 1
    port=$((port + 1))
    while accepts "$port"; do port=$((port + 1)); done # the restart must reach this run's server
    redis_on "$port" || { WHY="redis-server did not start: $(tail -n1 "$RES/redis.log")"; kill "$RPID" 2>/dev/null; return 1; }
    timeout "$t" "${P[@]}" --route "$1" --addr "127.0.0.1:$port" --secs "$RECOVERY_SECS" --tasks "$RECOVERY_TASKS" \
        >"$RES/cell.out" 2>"$RES/cell.err" &
    cpid=$!
    sleep "$RECOVERY_KILL_AT"
    kill -KILL "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
    killed=$(date +%s.%N) && ! accepts "$port" || killed=nan
    sleep "$RECOVERY_DOWN"
    restarted=$(date +%s.%N) && redis_on "$port" || restarted=nan
    wait "$cpid"
    rc=$?
    kill "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
    OUT=$(sed -n 's/^redis_recovery //p' "$RES/cell.out" | head -n1)
    case $killed/$restarted in
        nan/*) WHY="127.0.0.1:$port still accepted connections after the kill" ;;
        */nan) WHY="redis-server did not restart: $(tail -n1 "$RES/redis.log")" ;;
        *) [ $rc = 0 ] && [ -n "$OUT" ] && OUT+=" killed_unix=$killed restarted_unix=$restarted" && return 0
            WHY="redis_recovery: exit $rc: $(tail -n1 "$RES/cell.err")" ;;
    esac
    return 1
}
accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Starts redis-server on port $1 (under the prefix "${@:2}"); sets RPID; fails if no accept in 5 s.
redis_on() {
    "${@:2}" redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --logfile '' >"$RES/redis.log" 2>&1 &
    RPID=$!
    for _ in $(seq 1 500); do accepts "$1" && return 0; kill -0 "$RPID" 2>/dev/null || return 1; sleep 0.01; done
    return 1
}

# ---------------------------------------------------------------- clients
# Against the server at $addr, each sets OUT to its fields, or WHY and fails. Echo: $1 connections.
loadgen() {
    run loadgen "$ECHO_TIMEOUT" "${PINC[@]}" "$BIN/loadgen" --addr "$addr" --conns "$1" --size 64 \
        --duration "$ECHO_SECS" --warmup "$ECHO_WARMUP"
}
# HTTP: $1 keep-alive connections of GET $2, for $3 s (HTTP_SECS) after $4 s
# (HTTP_WARMUP, http_load only), killed after $5 s; over SCHEME (http).
http_client() {
    local path=()
    [ "$2" = / ] || path=(--path "$2")
    [ "$HTTP_LOAD" = wrk ] || { run http_load "${5:-$HTTP_TIMEOUT}" "${PINC[@]}" "$BIN/http_load" --addr "$addr" "${path[@]}" \
        --conns "$1" --duration "${3:-$HTTP_SECS}" --warmup "${4:-$HTTP_WARMUP}"; return; }
    run -wrk "${5:-$HTTP_TIMEOUT}" "${PINC[@]}" wrk -t1 -c "$1" -d "${3:-$HTTP_SECS}s" --latency "${SCHEME:-http}://$addr$2" || return
    OUT=$(awk -v conns="$1" '
        function us(v) { return v ~ /us$/ ? v + 0 : v ~ /ms$/ ? v * 1000 : v ~ /m$/ ? v * 60e6 : v * 1e6 }
        $1 == "50%" { p50 = us($2) }
        $1 == "99%" { p99 = us($2) }
        / requests in / { total = $1; secs = $4; sub(/s,$/, "", secs) }
        $1 == "Requests/sec:" { rps = $2 }
        /Socket errors:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) errors += $i + 0 }
        /Non-2xx or 3xx responses:/ { errors += $NF }
        END { if (total == "") exit 1
            printf "conns=%s secs=%s requests_total=%s requests=%s rps=%.0f p50_us=%.1f p99_us=%.1f errors=%d\n",
                conns, secs, total, total, rps, p50, p99, errors }' "$RES/cell.out") || { WHY="wrk: no count in its report" && return 1; }
}
# HTTP/2: a discarded warm-up run of h2load (HTTP2_WARMUP_N requests), then the measured one
# (HTTP2_N), the server's CPU read around that one only.
h2() {
    local h2=("${PINC[@]}" h2load -c "$HTTP2_CONNS" -m "$HTTP2_STREAMS")
    run -h2load "$HTTP2_TIMEOUT" "${h2[@]}" -n "$HTTP2_WARMUP_N" "http://$addr/" && mark &&
        run -h2load "$HTTP2_TIMEOUT" "${h2[@]}" -n "$HTTP2_N" "http://$addr/" || return
    OUT=$(awk '
        function us(v) { return v ~ /us$/ ? v + 0 : v ~ /ms$/ ? v * 1000 : v * 1e6 }
        /^finished in / { v = $3; sub(/,$/, "", v); secs = us(v) / 1e6; rps = $4 }
        /^requests: / { total = $2; done = $6; ok = $8; failed = $10; errored = $12; tmo = $14 }
        /^status codes: / { s2xx = $3 }
        /^time for request:/ { rmin = us($4); rmax = us($5); rmean = us($6); rsd = us($7) }
        END { if (ok == "" || ok == 0) exit 1
            printf "conns=%s streams=%s secs=%.4f rps=%.0f requests=%s done=%s succeeded=%s failed=%s errored=%s timeout=%s status_2xx=%s req_min_us=%.0f req_max_us=%.0f req_mean_us=%.0f req_sd_us=%.0f\n",
                c, m, secs, rps, total, done, ok, failed, errored, tmo, s2xx, rmin, rmax, rmean, rsd }' c="$HTTP2_CONNS" m="$HTTP2_STREAMS" "$RES/cell.out") ||
        { WHY="h2load: no request succeeded" && return 1; }
}
# Client wrapper: the client "$@", and the CPU of the stage's redis-server over it.
with_redis() {
    local ru0 rs0 ru1 rs1
    read -r ru0 rs0 _ < <(cpu "$RPID") && "$@" && read -r ru1 rs1 _ < <(cpu "$RPID") || return
    OUT="redis_utime=$((ru1 - ru0)) redis_stime=$((rs1 - rs0)) $OUT"
}
# Fairness: a ping every 5 ms beside flood $1; its count from the port the server printed.
fair_client() {
    run fairness_client "$FAIR_TIMEOUT" "${PINC[@]}" "$BIN/fairness_client" --addr "$addr" --flood "$1" --secs "$FAIR_SECS" \
        --stats "$(sed -n 's/^fairness stats=//p' "$RES/server.err" | head -n1)"
}
# Scaling: echo_load with $1 threads, not pinned. OUT: from its last line ("rps R ... server_us_per_rt
# X") and "N round trips", and the server's context switches per round trip.
echo_load() {
    local v n rts
    run -echo_load "$SCALE_TIMEOUT" "$EX/echo_load" --addr "$addr" --connections 64 --size 64 --duration "$SCALE_SECS" \
        --threads "$1" --server-pid "$spid" || return
    read -r v n < <(cat /proc/"$spid"/task/*/status 2>/dev/null |
        awk '/^voluntary_ctxt_switches:/ { v += $2 } /^nonvoluntary_ctxt_switches:/ { n += $2 } END { print v + 0, n + 0 }')
    rts=$(sed -n 's/.*: \([0-9]*\) round trips,.*/\1/p' "$RES/cell.out" | head -n1)
    OUT=$(grep '^rps ' "$RES/cell.out" | tail -n1 | awk -v r="${rts:-0}" -v v="$v" -v n="$n" '{ for (i = 1; i < NF; i++) f[$i] = $(i + 1) }
        END { if (r > 0 && f["rps"] != "" && f["server_us_per_rt"] != "") printf "rps=%s server_us_per_rt=%s round_trips=%s vcs_per_rt=%.5f ivcs_per_rt=%.5f",
            f["rps"], f["server_us_per_rt"], r, v / r, n / r }')
    [ -n "$OUT" ] || { WHY="unexpected echo_load output: $(tail -n1 "$RES/cell.out")" && return 1; }
}
# System calls per round trip at 1 connection (each a sleep and a wake-up of the server), by
# the kernel's tracepoints through perf stat, which unlike strace does not slow the server.
count_syscalls() {
    local events=raw_syscalls:sys_enter c pid rt
    for c in epoll_wait epoll_pwait recvfrom read sendto write futex; do events+=",syscalls:sys_enter_$c"; done
    perf stat -x, -e "$events" -p "$spid" -o "$RES/perf.out" &
    pid=$!
    sleep 0.2
    run -loadgen 60 "${PINC[@]}" "$BIN/loadgen" --addr "$addr" --conns 1 --size 64 --duration 2 --warmup 0
    kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rt=$(sed -n 's/.* rt_total=\([0-9]*\).*/\1/p' "$RES/cell.out")
    { [ -n "$rt" ] && [ -s "$RES/perf.out" ]; } || { WHY="no count from loadgen or perf" && return 1; }
    OUT="rt_total=$rt$(awk -F, '$1 ~ /^[0-9]+$/ { n = $3; sub(/.*sys_enter_?/, "", n); printf " %s=%s", n == "" ? "total" : n, $1 }' "$RES/perf.out")"
}
# Attack $2 over scheme $1 (none: no attackers). One GET / (what a first answer touches is not
# the attack's), VmRSS; the attackers connect and write, ATTACK_SETTLE s, VmRSS again; the normal
# client while they hold (until their stdin, a FIFO, ends), and once more after they have gone
# (after_rps, seconds apart: the pair sees the machine in one state).
attacked() {
    local SCHEME=$1 n=$ATTACK_CONNS r0 r1 apid="" ready="" done="" extra=() during after="" att="attackers=0 connected=0"
    local load=("$ATTACK_CLIENT_CONNS" / "$ATTACK_SECS" 0 $((${ATTACK_SECS%.*} + 30)))
    curl -sk --max-time 5 -o /dev/null "$SCHEME://$addr/" 2>/dev/null
    sleep 0.2
    r0=$(awk '/^VmRSS:/ {print $2}' "/proc/$spid/status" 2>/dev/null)
    [ "$2" != pipeline ] || n=$ATTACK_PIPE_CONNS extra=(--pipeline-bytes "$ATTACK_PIPE_BYTES" --path /page --rcvbuf "$ATTACK_PIPE_RCVBUF")
    if [ "$2" != none ]; then
        rm -f "$RES/attack.fifo" && mkfifo "$RES/attack.fifo" && : >"$RES/attack.out"
        # Read and write, so that neither end waits for the other; the
        # attacker gets no copy (7>&-), so closing it here ends its stdin.
        exec 7<>"$RES/attack.fifo"
        "${PINC[@]}" "$BIN/http_attack" --addr "$addr" --kind "$2" --conns "$n" "${extra[@]}" <"$RES/attack.fifo" \
            >"$RES/attack.out" 2>"$RES/attack.err" 7>&- &
        apid=$!
        for _ in $(seq 1 600); do
            ready=$(grep -m1 '^http_attack ready ' "$RES/attack.out")
            { [ -z "$ready" ] && kill -0 "$apid" 2>/dev/null; } || break
            sleep 0.1
        done
        [ -n "$ready" ] && sleep "$ATTACK_SETTLE" || WHY="the attacker did not get ready: $(tail -n1 "$RES/attack.err")"
    fi
    r1=$(awk '/^VmRSS:/ {print $2}' "/proc/$spid/status" 2>/dev/null)
    [ -n "$WHY" ] || http_client "${load[@]}"
    if [ -n "$apid" ]; then
        exec 7>&-
        for _ in $(seq 1 300); do kill -0 "$apid" 2>/dev/null && sleep 0.1; done
        kill "$apid" 2>/dev/null
        wait "$apid" 2>/dev/null
        done=$(grep -m1 '^http_attack done ' "$RES/attack.out")
        [ -n "$WHY$done" ] || WHY="the attacker did not finish: $(tail -n1 "$RES/attack.err")"
        during=$OUT
        sleep 1 # for the server to see the attackers' connections close
        [ -n "$WHY" ] || http_client "${load[@]}" || WHY="after the attack: $WHY"
        [ -n "$WHY" ] || after=" after_rps=$(grep -o ' rps=[0-9.]*' <<<" $OUT" | cut -d= -f2) after_p99_us=$(grep -o 'p99_us=[0-9.]*' <<<"$OUT" | cut -d= -f2)"
        OUT=$during
        att="attackers=$n $(grep -o 'connected=[0-9]* failed=[0-9]* bytes_per_conn=[0-9]*' <<<"$ready")"
        att+=" $(grep -o 'closed_by_server=[0-9]* answered_bytes=[0-9]*' <<<"$done")"
    fi
    [ -z "$WHY" ] || return 1
    { [ -n "$r0" ] && [ -n "$r1" ]; } || { WHY="VmRSS not read" && return 1; }
    OUT="$att rss0_kb=$r0 rss1_kb=$r1 nofile=$(ulimit -n) load=$HTTP_LOAD $OUT$after"
}

# ---------------------------------------------------------------- stages
# What the first touch of memory costs, cold and warm (bench/src/bin/firsttouch.rs), at the start and
# before the sleepers ($1): from the coldest the report judges which runs were served cold memory.
first_touch() {
    local line
    log "first touch ($1): a GiB just freed (warm), then up to $FIRSTTOUCH_MAX_MB MiB looking for cold memory"
    { line=$("$BIN/firsttouch" --max-mb "$FIRSTTOUCH_MAX_MB" --settle "$FIRSTTOUCH_SETTLE" 2>>"$RES/firsttouch.err") &&
        [ -n "$line" ] && echo "$line when=$1" >>"$RES/firsttouch.txt"; } || log "note: firsttouch failed: $(tail -n1 "$RES/firsttouch.err")"
}
# The runtimes of "$@" that RUNTIMES selects and this machine has (Go once
# built, asyncio with python3), for an axis; yieldloop-tracing goes with yieldloop.
pick() {
    local rt out=() IFS=,
    for rt; do
        [[ ($rt != go* || -n $GO_RUNS) && ($rt != asyncio || -n $PY) ]] || continue
        [[ " $RUNTIMES " == " all " || " $RUNTIMES " == *" ${rt%-tracing} "* ]] && out+=("$rt")
    done
    echo "${out[*]}"
}
# The sleepers' runtimes at N = $1 in run $2 (0: warm-up): threads up to 10,000 (the point is their
# ceiling); asyncio at 1,000,000 only in the first REPS_1M_ASYNCIO runs, no warm-up (a minute a run).
sleepers_rts() {
    local threads=threads asyncio=asyncio
    [ "$1" -le 10000 ] || threads=""
    [ "$1" -lt 1000000 ] || { [ "$2" -ge 1 ] && [ "$2" -le "$REPS_1M_ASYNCIO" ]; } || asyncio=""
    pick yieldloop tokio may $threads floor go $asyncio
}
# Large N touch up to gigabytes, and on a virtual machine memory the host has not backed for a few
# seconds costs several times more on first touch. So that no runtime pays for memory left idle,
# each N >= 100,000 starts with a discarded warm-up run of each runtime, and each run there follows
# a pre-touch of as much memory as the hungriest warm-up run held (VmHWM and a tenth), freed just
# before. A run still served cold memory shows in its system time per fault; the report flags it.
stage_sleepers() {
    local rt
    [ "$STAGES" = sleepers ] || first_touch sleepers # else just measured
    for N in $SLEEPERS_NS; do
        case $N in 1000000) N_REPS=$REPS_1M ;; 100000) N_REPS=$REPS_100K ;; *) N_REPS=$REPS ;; esac
        TOUCH_MB="" STAGE=sleepers
        if [ "$N" -ge 100000 ] && [ "$WARMUP" = 1 ]; then
            for rt in $(sleepers_rts "$N" 0 | tr , ' '); do
                TAGS="runtime=$rt n=$N order=0" && one_cell "sleeper $rt $N" 0 0 sleepers-warmup
            done
            [ "$PRETOUCH" = 1 ] && TOUCH_MB=$(grep " n=$N .*ok=1" "$RES/sleepers-warmup.txt" | grep -o 'hwm_kb=[0-9]*' |
                cut -d= -f2 | sort -n | tail -n1 | awk '$1 > 0 { printf "%d", $1 * 1.1 / 1024 + 1 }')
        fi
        run_stage sleepers
    done
}
# Without perf's syscall tracepoints there is no syscalls.txt, and no table.
stage_syscalls() {
    rm -f "$RES/syscalls.txt"
    command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 && run_stage syscalls ||
        echo "perf with syscall tracepoints missing: the system-call table is left out"
}
# The settings in the first record, for `report --section http2`; spaces become _ or /.
stage_http2() {
    rm -f "$RES/http2.txt"
    [ -n "$(lacks h2load)" ] || echo "http2 kind=setup h2load=$(h2load --version | awk '{print $2; exit}') conns=$HTTP2_CONNS streams=$HTTP2_STREAMS n=$HTTP2_N warmup_n=$HTTP2_WARMUP_N reps=$HTTP2_REPS pin_server=$(tr ' ' _ <<<"${PIN_SERVER:-none}") pin_client=$(tr ' ' _ <<<"${PIN_CLIENT:-none}") clk_tck=$(getconf CLK_TCK) date=$(date -u +%Y-%m-%dT%H:%MZ) load_start=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >>"$RES/http2.txt"
    run_stage http2
    [ -n "$(lacks h2load)" ] || echo "http2 kind=end load_end=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" >>"$RES/http2.txt"
}
# One redis-server for the stage, pinned with the client: the service's core is its own.
stage_service() {
    RPORT=$((port += 1)) RPID=""
    if [ -n "$(lacks load)$(lacks redis)" ] || redis_on "$RPORT" "${PINC[@]}"; then run_stage service
    else echo "service ok=0 skipped=1 reason=redis-server did not start: $(tail -n1 "$RES/redis.log")" >>"$RES/service.txt"; fi
    kill "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
    rm -f "$RES/redis.log"
}
# A redis-server and a PostgreSQL of the stage's own, from bench/src/bin/db_servers.rs, which
# stops them when its stdin, a FIFO held open here, closes. A missing one skips its cells.
stage_db() {
    local dir line db dbpid dbfd pg
    log "db: starting redis-server and PostgreSQL"
    dir=$(mktemp -d) && mkfifo "$dir/in"
    "$BIN/db_servers" --redis --postgres <"$dir/in" >"$dir/out" 2>"$RES/db_servers.err" &
    dbpid=$! && exec {dbfd}>"$dir/in"
    for _ in $(seq 1 1200); do { grep -q '^ready$' "$dir/out" || ! kill -0 "$dbpid" 2>/dev/null; } && break; sleep 0.1; done
    declare -gA DB_ADDR=() DB_PID=()
    DBS=""
    for db in redis postgres; do
        line=$(grep -m1 "^server db=$db " "$dir/out") || line=" ok=0 reason=did not start: $(grep -v '^ *$' "$RES/db_servers.err" |
            tail -n 1 | cut -c1-200 | grep . || echo no answer from db_servers)"
        if [[ $line == *" ok=1 "* ]]; then
            DB_ADDR[$db]=$(grep -o 'addr=[^ ]*' <<<"$line" | cut -d= -f2) DB_PID[$db]=$(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2)
            DBS+=${DBS:+,}$db
        else
            log "db: $db skipped: ${line#* reason=}" && echo "db db=$db ok=0 skipped=1 reason=${line#* reason=}" >>"$RES/db.txt"
        fi
    done
    command -v redis-server >/dev/null && echo "db_redis=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')" >>"$RES/meta.txt"
    pg=$(find /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -n 1)
    [ -n "$pg" ] && echo "db_postgres=$("$pg" --version | sed 's/.*) //')" >>"$RES/meta.txt"
    PLACES=one && [ "$CORES" -ge 2 ] && PLACES=one,split
    run_stage db
    exec {dbfd}>&-
    wait "$dbpid" 2>/dev/null
    rm -rf "$dir"
}
# The TLS servers need a certificate (none without openssl, or with http_load, which has no TLS).
# A subshell: the limit on open files raised for the attackers ends with the stage.
stage_attack() {
    (
        need=$(((ATTACK_CONNS > ATTACK_PIPE_CONNS ? ATTACK_CONNS : ATTACK_PIPE_CONNS) + ATTACK_CLIENT_CONNS + 256))
        [ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge "$need" ] || ulimit -n "$need" 2>/dev/null ||
            log "note: attack: ulimit -n $need failed (hard limit $(ulimit -Hn)); runs may fail"
        TLS_SERVERS=yieldloop_tls,hyper_tls why=$(lacks load)
        [ -n "$why" ] || [ "$HTTP_LOAD" = wrk ] || why="$HTTP_LOAD has no TLS"
        [ -n "$why" ] || command -v openssl >/dev/null || why="openssl not found, so no certificate"
        [ -n "$why" ] || { mkdir -p "$TLS" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TLS/key.pem" \
            -out "$TLS/cert.pem" -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>"$RES/cell.err"; } ||
            why="openssl req failed: $(tail -n1 "$RES/cell.err")"
        [ -z "$why" ] || TLS_SERVERS=""
        [ -z "$why" ] || [ -n "$(lacks load)" ] || echo "attack kind=tls-hello ok=0 skipped=1 reason=$why" >>"$RES/attack.txt"
        run_stage attack
    )
    rm -f "$RES/attack.fifo" "$RES/attack.out" "$RES/attack.err"
}

first_touch start
for stage in handover xmutex lateness sleepers echo syscalls http http2 service scaling db hook fanout diag fairness recovery attack; do
    want "$stage" || continue
    if declare -F "stage_$stage" >/dev/null; then "stage_$stage"; else run_stage "$stage"; fi
done
printf '%s\n' "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" "total_s=$(elapsed)" >>"$RES/meta.txt"
log "writing $OUT_MD and $OUT_SVG"
"$BIN/report" --results "$RES" --md "$OUT_MD" --svg "$OUT_SVG"
log "done"

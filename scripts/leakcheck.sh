#!/usr/bin/env bash
# Runs the test suite under valgrind memcheck and fails on any definite leak
# or memory error.
#
#   scripts/leakcheck.sh                 # every test binary, as far as it can
#   LEAKCHECK_ONLY="runtime timers" scripts/leakcheck.sh   # just these
#   LEAKCHECK_JOBS=4 scripts/leakcheck.sh                  # parallel binaries
#
# The test binaries (the library's unit tests and every file of tests/) are
# built with `cargo test --no-run --message-format=json`, which also names
# them. Each runs with --test-threads=1 under
#
#   valgrind --leak-check=full --errors-for-leak-kinds=definite
#            --error-exitcode=1 --max-stackframe=131072 --fair-sched=yes
#
# following the copies of itself that a few tests start (so that their code
# is checked too). Valgrind's logs go to target/leakcheck/<name>.<pid>.vg,
# the tests' own output to target/leakcheck/<name>.out. At the end a table
# shows, per binary, the tests' result, the bytes definitely lost and
# memcheck's error count; the script exits 1 if any binary had a definite
# leak, a memcheck error or a failing test.
#
# Why --max-stackframe=131072: every task runs on a stack of the crate's own
# pool, and the pool does not announce its stacks to valgrind
# (VALGRIND_STACK_REGISTER). Memcheck then takes a switch between two
# stacks less than --max-stackframe apart (default 2 MB; pool stacks sit
# next to each other, 256 KiB apart by default) for a huge push or pop of
# one stack, marks the other stack's live frames as inaccessible, and
# reports thousands of false "invalid read/write" and "uninitialised value"
# errors. With a limit of 128 KiB, any larger jump of the stack pointer is
# taken as a stack switch, which is what it is here; no Rust frame in these
# tests comes near 128 KiB.
#
# What is skipped, and why:
#
# - test files that run the example programs as child processes (found by
#   looking for `example::`, `Running::start` or `"--example"` in
#   tests/<name>.rs; today echo_faults, examples, net_examples and
#   walkthrough): they check the examples from outside, with time limits
#   and loads (10,000 connections, latency bounds, timeouts of a second)
#   meant for native speed, and the runtime code the examples use is
#   covered by the other binaries.
# - single tests listed in skip_tests below: they assert real-time
#   precision or CPU use (timer slack in milliseconds, elapsed-time
#   ceilings, no slow-task warning) that code running 20-50 times slower
#   cannot meet. Each is listed with its reason.
set -uo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
out_dir="$CARGO_TARGET_DIR/leakcheck"
jobs="${LEAKCHECK_JOBS:-$(nproc)}"

# Whether tests/<name>.rs runs example programs (see above).
runs_examples() {
    [ -f "tests/$1.rs" ] && grep -qE 'example::|Running::start|"--example"' "tests/$1.rs"
}

# binary -> the tests to skip in it (each passed to --skip).
declare -A skip_tests=(
    # 200 clients echoing 64 KiB each must finish within 10 s.
    [tcp_echo]="concurrent_clients_echo_exactly"
    # many_timers: 50,000 sleepers must all wake within 20 s and the run
    # take under 8 s. stale_timers_wake_nobody: data written 5 ms into a
    # 30 ms read timeout must beat the timeout.
    [timers]="many_timers stale_timers_wake_nobody"
    # 1,000 tasks sleeping a second must use under 50 ms of CPU (169 ms
    # under valgrind).
    [idle_cpu]="thousand_sleeping_tasks_use_no_cpu"
    # Expects no "yieldloop: task" line on stderr; the slow-task warning
    # (a task running 100 ms without pausing) fires under valgrind.
    [overflow]="ordinary_thread_overflow_is_left_alone"
    # Expects a 5 ms sleep to be still ahead when the loop first polls.
    [diagnostics]="trace_file_tells_the_story"
)

command -v valgrind >/dev/null || { echo "leakcheck: valgrind is not installed" >&2; exit 2; }
mkdir -p "$out_dir"
rm -f "$out_dir"/*.vg "$out_dir"/*.out "$out_dir"/*.rc

echo "leakcheck: building the test binaries" >&2
list="$out_dir/binaries.txt"
cargo test --no-run --message-format=json 2>"$out_dir/build.log" | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if (m.get("reason") == "compiler-artifact" and m.get("executable")
            and m.get("profile", {}).get("test")):
        kind = m["target"]["kind"][0]
        name = m["target"]["name"] + ("-unit" if kind == "lib" else "")
        print(name, m["executable"])
' >"$list"
if [ "${PIPESTATUS[0]}" -ne 0 ] || [ ! -s "$list" ]; then
    echo "leakcheck: the build failed:" >&2
    tail -30 "$out_dir/build.log" >&2
    exit 2
fi

run_one() {
    local name="$1" exe="$2"
    local args=(--test-threads=1)
    for t in ${skip_tests[$name]:-}; do
        args+=(--skip "$t")
    done
    valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
        --max-stackframe=131072 --fair-sched=yes --num-callers=40 \
        --trace-children=yes --trace-children-skip='*/cargo,*/rustc,*/sh,*/bash' \
        --log-file="$out_dir/$name.%p.vg" \
        "$exe" "${args[@]}" >"$out_dir/$name.out" 2>&1
    echo $? >"$out_dir/$name.rc"
}

names=()
copies=()
trap 'rm -f "${copies[@]}"' EXIT
while read -r name exe; do
    if [ -n "${LEAKCHECK_ONLY:-}" ]; then
        case " $LEAKCHECK_ONLY " in *" ${name%-unit} "* | *" $name "*) ;; *) continue ;; esac
    elif runs_examples "$name"; then
        echo "leakcheck: skipping $name: it runs example programs (see the header)" >&2
        continue
    fi
    names+=("$name")
    echo "leakcheck: $name" >&2
    # Run a copy, so that a rebuild while this runs (which replaces the
    # file) cannot swap the binary under a test that re-executes itself.
    # The copy stays next to the original: tests find their way around the
    # target directory from their own path.
    copy="$(dirname "$exe")/leakcheck-$(basename "$exe")"
    cp "$exe" "$copy"
    copies+=("$copy")
    run_one "$name" "$copy" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n
    done
done <"$list"
wait

failed=0
printf '%-18s %-6s %-40s %s\n' binary exit tests "definitely lost / memcheck errors"
for name in "${names[@]}"; do
    rc=$(cat "$out_dir/$name.rc" 2>/dev/null || echo "?")
    result=$(grep -h '^test result:' "$out_dir/$name.out" | tail -1 | sed 's/test result: //; s/; 0 ignored.*//')
    # One log per process: the test binary and the copies of itself that
    # some tests start.
    logs=("$out_dir/$name".*.vg)
    read -r procs lost errors <<<"$(cat "${logs[@]}" | awk '
        /ERROR SUMMARY:/ { procs++; errors += $4 }
        /definitely lost:/ { gsub(",", "", $4); lost += $4 }
        END { print procs + 0, lost + 0, errors + 0 }')"
    printf '%-18s %-6s %-40s %s\n' "$name" "$rc" "${result:-no result}" \
        "$lost bytes / $errors errors ($procs process(es))"
    [ "$lost" = 0 ] && [ "$errors" = 0 ] && [ "$procs" -gt 0 ] || failed=1
    [ "$rc" = 0 ] || failed=1
done
if [ "$failed" -ne 0 ]; then
    echo "leakcheck: FAILED (logs in $out_dir)" >&2
    exit 1
fi
echo "leakcheck: ok, no definite leaks and no memcheck errors in ${#names[@]} test binaries" >&2

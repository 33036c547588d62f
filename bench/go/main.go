// Command gobench runs the Go versions of the yieldloop comparison
// benchmarks: the same workloads, arguments and output lines as the Rust
// binaries in bench/src/bin, so that bench/run.sh and the report treat Go
// as one more runtime.
//
//	gobench sleepers --n N
//	gobench echo --addr 127.0.0.1:PORT
//	gobench handover --bench pingpong|bounded|mutex|yield|spawn|scope|blockon [--ops N]
//	gobench xmutex --bench contended|uncontended|uncontended_local [--ops N]
//	gobench fanout --bench broadcast|skewed [--n N] [--receivers R] [--seed S]
//	gobench fairness --flood lines|chunks|chan|none --addr 127.0.0.1:PORT
//
// Everything but xmutex, fanout and fairness runs with one P
// (GOMAXPROCS=1), for parity with the other runtimes' single scheduler
// thread: bench/run.sh sets the environment variable, and main sets it
// again in case the binary is run by hand. xmutex, which compares locks
// between two worker threads, and fanout, which spreads work over two
// workers, set two; fairness takes GOMAXPROCS from the environment
// (bench/run.sh runs it with 1 and with 2).
// Standard library only.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	runtime.GOMAXPROCS(1)
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "sleepers":
		sleepersMain(args)
	case "echo":
		echoMain(args)
	case "handover":
		handoverMain(args)
	case "xmutex":
		xmutexMain(args)
	case "fanout":
		fanoutMain(args)
	case "fairness":
		fairnessMain(args)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gobench sleepers --n N\n"+
		"       gobench echo --addr HOST:PORT\n"+
		"       gobench handover --bench B [--ops N]\n"+
		"       gobench xmutex --bench B [--ops N]\n"+
		"       gobench fanout --bench broadcast|skewed [--n N] [--receivers R] [--seed S]\n"+
		"       gobench fairness --flood lines|chunks|chan|none --addr HOST:PORT")
	os.Exit(2)
}

// flags parses "--key value" pairs, accepting only the keys given.
func flags(args []string, keys ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		known := false
		for _, k := range keys {
			if args[i] == "--"+k {
				known = true
			}
		}
		if !known || i+1 >= len(args) {
			usage()
		}
		out[args[i][2:]] = args[i+1]
	}
	return out
}

// positive parses a positive integer argument, or exits with a message.
func positive(prog, name, v string) uint64 {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		fmt.Fprintf(os.Stderr, "%s: --%s must be a positive integer\n", prog, name)
		os.Exit(2)
	}
	return n
}

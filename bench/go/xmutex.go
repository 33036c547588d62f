package main

// Mutex micro-benchmarks across threads, as bench/src/bin/xmutex.rs, with
// two Ps (GOMAXPROCS=2):
//
//   - contended: four goroutines each loop: take a sync.Mutex, add one to
//     the value, runtime.Gosched while holding it, release it. One op is
//     one acquisition; waited is the share of acquisitions that found the
//     lock taken (a TryLock first tells). (sync.Mutex lets a running
//     goroutine take a just-released lock ahead of a queued one.)
//   - uncontended: one goroutine takes and releases a sync.Mutex nobody
//     else uses. One op is one Lock and Unlock.
//   - uncontended_local: not applicable (Go has no single-thread mutex).
//
// Output:
//
//	xmutex runtime=go bench=B ops=N secs=S ns_per_op=X [waited=W]

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

const xmutexTasks = 4

func xmutexMain(args []string) {
	runtime.GOMAXPROCS(2)
	f := flags(args, "bench", "ops")
	bench := f["bench"]
	ops := uint64(5000000)
	switch bench {
	case "contended":
		ops = 200000
	case "uncontended":
	case "uncontended_local":
		fmt.Println("xmutex runtime=go bench=uncontended_local na=1 reason=Go has no single-thread mutex")
		return
	default:
		usage()
	}
	if v, ok := f["ops"]; ok {
		ops = positive("xmutex", "ops", v)
	}
	one := func(n uint64) (time.Duration, float64) {
		if bench == "contended" {
			return xmutexContended(n)
		}
		return xmutexUncontended(n), -1
	}
	warm := ops / 10
	if warm < xmutexTasks {
		warm = xmutexTasks
	}
	one(warm)
	took, waited := one(ops)
	done := ops
	extra := ""
	if bench == "contended" {
		done = ops / xmutexTasks * xmutexTasks
		extra = fmt.Sprintf(" waited=%.3f", waited)
	}
	fmt.Printf("xmutex runtime=go bench=%s ops=%d secs=%.6f ns_per_op=%.2f%s\n",
		bench, done, took.Seconds(), float64(took.Nanoseconds())/float64(done), extra)
}

func xmutexContended(ops uint64) (time.Duration, float64) {
	perTask := ops / xmutexTasks
	var mu sync.Mutex
	var value uint64
	var wg sync.WaitGroup
	waits := make([]uint64, xmutexTasks)
	start := time.Now()
	for t := 0; t < xmutexTasks; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			for i := uint64(0); i < perTask; i++ {
				if !mu.TryLock() {
					waits[t]++
					mu.Lock()
				}
				value++
				runtime.Gosched()
				mu.Unlock()
			}
		}(t)
	}
	wg.Wait()
	took := time.Since(start)
	if value != perTask*xmutexTasks {
		fmt.Fprintln(os.Stderr, "xmutex: lost increments")
		os.Exit(3)
	}
	var waited uint64
	for _, w := range waits {
		waited += w
	}
	return took, float64(waited) / float64(perTask*xmutexTasks)
}

func xmutexUncontended(ops uint64) time.Duration {
	var mu sync.Mutex
	var value uint64
	start := time.Now()
	for i := uint64(0); i < ops; i++ {
		mu.Lock()
		value++
		mu.Unlock()
	}
	took := time.Since(start)
	sink += value
	return took
}

package main

// Hand-over micro-benchmarks, as bench/src/bin/handover.rs: how long the Go
// scheduler takes to pass control (and a value, or a lock) from one
// goroutine to another with one P (GOMAXPROCS=1).
//
//   - pingpong: goroutine A sends i on one unbuffered channel, B receives
//     it and sends it back on another, A waits for the reply. One op is one
//     one-way hand-over (a round trip is two).
//   - bounded: a producer sends N integers through a channel of capacity
//     64 to a consumer. One op is one message.
//   - mutex: two goroutines each loop: take a sync.Mutex, runtime.Gosched
//     while holding it, release it. One op is one acquisition. (sync.Mutex
//     lets a running goroutine take a just-released lock ahead of a queued
//     one, so not every acquisition is a hand-over.)
//   - yield: two goroutines each call runtime.Gosched in a loop. One op is
//     one Gosched.
//   - spawn: one goroutine starts a goroutine that sends its argument on a
//     channel of its own (capacity 1) and receives it, one after the other.
//     One op is one `go` and its receive.
//   - scope: a goroutine starts 1,000 goroutines that each add their
//     argument to a shared counter, waits for them with a WaitGroup, and
//     repeats. One op is one goroutine of such a round.
//   - blockon: not applicable (Go has no futures).
//
// Each process runs one warm-up round (a tenth of the ops) and then one
// measured round, and prints
//
//	handover runtime=go bench=B ops=N secs=S ns_per_op=X

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const (
	scopeChildren = 1000
	capacity      = 64
)

var defaultOps = map[string]uint64{
	"pingpong": 400000,
	"bounded":  1000000,
	"mutex":    400000,
	"yield":    1000000,
	"spawn":    200000,
	"scope":    200000,
	"blockon":  400000,
}

// sink keeps results alive so the loops are not optimised away.
var sink uint64

func handoverMain(args []string) {
	f := flags(args, "bench", "ops")
	bench := f["bench"]
	ops, known := defaultOps[bench]
	if !known {
		usage()
	}
	if v, ok := f["ops"]; ok {
		ops = positive("handover", "ops", v)
	}
	if ops < 2 {
		fmt.Fprintln(os.Stderr, "handover: --ops must be an integer of at least 2")
		os.Exit(2)
	}
	var one func(uint64) time.Duration
	switch bench {
	case "pingpong":
		one = pingpong
	case "bounded":
		one = bounded
	case "mutex":
		one = mutex
	case "yield":
		one = yields
	case "spawn":
		one = spawns
	case "scope":
		one = scopes
	case "blockon":
		fmt.Println("handover runtime=go bench=blockon na=1 reason=Go has no futures to block on; compare its spawn row")
		return
	}
	warm := ops / 10
	if warm < 1 {
		warm = 1
	}
	one(warm)
	took := one(ops)
	done := ops
	switch bench {
	case "pingpong", "mutex", "yield":
		done = ops / 2 * 2
	}
	fmt.Printf("handover runtime=go bench=%s ops=%d secs=%.6f ns_per_op=%.2f\n",
		bench, done, took.Seconds(), float64(took.Nanoseconds())/float64(done))
}

func pingpong(ops uint64) time.Duration {
	rounds := ops / 2
	ping := make(chan uint64)
	pong := make(chan uint64)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	start := time.Now()
	var sum uint64
	for i := uint64(0); i < rounds; i++ {
		ping <- i
		sum += <-pong
	}
	took := time.Since(start)
	close(ping)
	for range pong {
	}
	sink += sum
	return took
}

func bounded(ops uint64) time.Duration {
	ch := make(chan uint64, capacity)
	total := make(chan uint64)
	start := time.Now()
	go func() {
		for i := uint64(0); i < ops; i++ {
			ch <- i
		}
		close(ch)
	}()
	go func() {
		var sum uint64
		for v := range ch {
			sum += v
		}
		total <- sum
	}()
	sum := <-total
	took := time.Since(start)
	if sum != ops*(ops-1)/2 {
		panic("bounded: wrong sum")
	}
	return took
}

func mutex(ops uint64) time.Duration {
	perTask := ops / 2
	var m sync.Mutex
	var count uint64
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(2)
	for t := 0; t < 2; t++ {
		go func() {
			for i := uint64(0); i < perTask; i++ {
				m.Lock()
				count++
				runtime.Gosched()
				m.Unlock()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if count != 2*perTask {
		panic("mutex: wrong count")
	}
	return took
}

func yields(ops uint64) time.Duration {
	perTask := ops / 2
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(2)
	for t := 0; t < 2; t++ {
		go func() {
			for i := uint64(0); i < perTask; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func spawns(ops uint64) time.Duration {
	start := time.Now()
	var sum uint64
	for i := uint64(0); i < ops; i++ {
		ch := make(chan uint64, 1)
		go func(i uint64) { ch <- i }(i)
		sum += <-ch
	}
	took := time.Since(start)
	sink += sum
	return took
}

func scopes(ops uint64) time.Duration {
	rounds := ops / scopeChildren
	if rounds < 1 {
		rounds = 1
	}
	var sum uint64
	start := time.Now()
	for r := uint64(0); r < rounds; r++ {
		var wg sync.WaitGroup
		wg.Add(scopeChildren)
		for i := uint64(0); i < scopeChildren; i++ {
			go func(i uint64) {
				atomic.AddUint64(&sum, i)
				wg.Done()
			}(i)
		}
		wg.Wait()
	}
	took := time.Since(start)
	if sum != rounds*scopeChildren*(scopeChildren-1)/2 {
		panic("scope: wrong sum")
	}
	return took
}

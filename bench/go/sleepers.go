package main

// The "sleepers" workload, as bench/src/bin/sleepers.rs: N goroutines each
// sleep one second and then return a pseudo-random number; all of them are
// joined (a WaitGroup, the results in a slice, summed afterwards). Prints
//
//	sleepers runtime=go n=N wall_s=.. spawn_s=.. hwm_kb=.. maps=.. checksum=..
//
// with the same meanings: wall_s from just before the first spawn until the
// join returned, spawn_s the part of it spent starting the goroutines,
// hwm_kb VmHWM from /proc/self/status at the end, maps the largest line
// count of /proc/self/maps seen (after the spawns, in the last goroutine
// before it sleeps, and after the join).
//
// One more field, early=K: the goroutines that had already finished before
// the last one was started. Go preempts the spawning goroutine (every 10 ms
// or so) and runs the new ones in between, so when spawning takes longer
// than the sleep, the first goroutines are done, and their stacks reused,
// before the last ones exist: the peak memory is then not that of N
// goroutines at once.

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var maxMaps int64

// spawning is 1 until the last goroutine is started; early counts the
// goroutines that finished before that.
var spawning, early int32

// sampleMaps counts the process's memory mappings and keeps the largest
// count seen.
func sampleMaps() {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	n := int64(bytes.Count(b, []byte{'\n'}))
	for {
		old := atomic.LoadInt64(&maxMaps)
		if n <= old || atomic.CompareAndSwapInt64(&maxMaps, old, n) {
			return
		}
	}
}

// statusKB reads a kB field of /proc/self/status, e.g. VmHWM.
func statusKB(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			v := strings.TrimPrefix(line, field+":")
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}

// random is splitmix64, the number each task returns, in 0..100.
func random(seed, i uint64) uint64 {
	z := seed + i*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return (z ^ (z >> 31)) % 100
}

func sleepersMain(args []string) {
	f := flags(args, "n")
	n := uint64(1000)
	if v, ok := f["n"]; ok {
		n = positive("sleepers", "n", v)
	}
	seed := uint64(time.Now().UnixNano())
	results := make([]uint64, n)
	var wg sync.WaitGroup

	atomic.StoreInt32(&spawning, 1)
	start := time.Now()
	wg.Add(int(n))
	for i := uint64(0); i < n; i++ {
		go func(i uint64) {
			if i == n-1 {
				sampleMaps()
			}
			time.Sleep(time.Second)
			results[i] = random(seed, i)
			if atomic.LoadInt32(&spawning) == 1 {
				atomic.AddInt32(&early, 1)
			}
			wg.Done()
		}(i)
	}
	spawn := time.Since(start)
	atomic.StoreInt32(&spawning, 0)
	sampleMaps()
	wg.Wait()
	var checksum uint64
	for _, r := range results {
		checksum += r
	}
	wall := time.Since(start)

	sampleMaps()
	fmt.Printf("sleepers runtime=go n=%d wall_s=%.6f spawn_s=%.6f hwm_kb=%d maps=%d checksum=%d early=%d\n",
		n, wall.Seconds(), spawn.Seconds(), statusKB("VmHWM"), atomic.LoadInt64(&maxMaps), checksum,
		atomic.LoadInt32(&early))
}

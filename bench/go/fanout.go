package main

// gobench fanout --bench broadcast|skewed [--n N] [--receivers R] [--seed S]
//
// The Go side of bench/src/bin/fanout.rs, with two Ps (GOMAXPROCS=2) like
// the other runtimes' two workers:
//
//   - broadcast: Go has no broadcast channel; the idiom is one buffered
//     channel per receiver (1,024 slots) that the sender writes every value
//     to, so a slow receiver holds the sender back instead of lagging.
//   - skewed: the same Pareto costs (same xorshift64, same seed) burned by
//     one goroutine each, joined with a WaitGroup; Go's scheduler steals
//     work between its Ps.

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"time"
)

// burn is fanout.rs's burn: iters steps of a multiply-add.
func burn(iters uint64) uint64 {
	x := iters
	for i := uint64(0); i < iters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// paretoCosts is fanout.rs's costs.
func paretoCosts(n int, seed uint64) []uint64 {
	s := seed
	if s == 0 {
		s = 1
	}
	out := make([]uint64, n)
	for i := range out {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		u := float64((s>>11)+1) / float64(uint64(1)<<53)
		x := 20000.0 / math.Pow(u, 1.0/1.5)
		out[i] = uint64(math.Min(x, 20000.0*500.0))
	}
	return out
}

func fanoutMain(args []string) {
	runtime.GOMAXPROCS(2)
	f := flags(args, "bench", "n", "receivers", "seed")
	receivers := 1000
	if v, ok := f["receivers"]; ok {
		receivers = int(positive("fanout", "receivers", v))
	}
	seed := uint64(21)
	if v, ok := f["seed"]; ok {
		seed = positive("fanout", "seed", v)
	}
	switch f["bench"] {
	case "broadcast":
		n := uint64(100000)
		if v, ok := f["n"]; ok {
			n = positive("fanout", "n", v)
		}
		chans := make([]chan uint64, receivers)
		sums := make([]uint64, receivers)
		var wg sync.WaitGroup
		for i := range chans {
			chans[i] = make(chan uint64, 1024)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				var sum uint64
				for v := range chans[i] {
					sum += v
				}
				sums[i] = sum
			}(i)
		}
		t0 := time.Now()
		for v := uint64(0); v < n; v++ {
			for _, c := range chans {
				c <- v
			}
		}
		for _, c := range chans {
			close(c)
		}
		wg.Wait()
		wall := time.Since(t0)
		want := n * (n - 1) / 2
		for _, s := range sums {
			if s != want {
				fmt.Fprintln(os.Stderr, "fanout: a receiver's sum is off")
				os.Exit(1)
			}
		}
		fmt.Printf("fanout runtime=go bench=broadcast n=%d receivers=%d wall_ms=%.1f ns_per_delivery=%.1f\n",
			n, receivers, float64(wall.Nanoseconds())/1e6, float64(wall.Nanoseconds())/(float64(n)*float64(receivers)))
	case "skewed":
		n := 10000
		if v, ok := f["n"]; ok {
			n = int(positive("fanout", "n", v))
		}
		costs := paretoCosts(n, seed)
		tSeq := time.Now()
		var want uint64
		for _, c := range costs {
			want += burn(c)
		}
		seq := time.Since(tSeq)
		results := make([]uint64, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i, c := range costs {
			wg.Add(1)
			go func(i int, c uint64) {
				defer wg.Done()
				results[i] = burn(c)
			}(i, c)
		}
		wg.Wait()
		wall := time.Since(t0)
		var got uint64
		for _, r := range results {
			got += r
		}
		if got != want {
			fmt.Fprintln(os.Stderr, "fanout: the tasks' results are off")
			os.Exit(1)
		}
		fmt.Printf("fanout runtime=go bench=skewed n=%d receivers=0 wall_ms=%.1f serial_ms=%.1f\n",
			n, float64(wall.Nanoseconds())/1e6, float64(seq.Nanoseconds())/1e6)
	default:
		usage()
	}
}

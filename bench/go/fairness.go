package main

// Fairness server, as bench/src/bin/fairness.rs: a flood goroutine
// consuming a never-ending input as fast as it can beside an echo
// goroutine serving bench/src/bin/fairness_client.rs's pings.
//
//	gobench fairness --flood lines|chunks|chan|none --addr 127.0.0.1:PORT
//
// Each connection starts with a role byte: 'P' for the ping connection
// (echoed by echo(), as the echo server), 'F' for the flood connection.
// The floods do FNV-1a over each item: lines read with
// bufio.Reader.ReadString('\n') (an 8 KiB reader), raw reads of up to 1 KiB
// (an item is a KiB consumed), or values from a producer goroutine through
// a buffered chan of capacity 1024 (no flood connection). The count is
// published every 64 items and served, with the nanoseconds since the
// start, on an ephemeral port printed on stderr as
// "fairness stats=127.0.0.1:PORT": one "count=N ns=T" line per line
// received. Here that listener is a goroutine like the others (Go has no
// thread outside its scheduler); it reads the count and the clock
// together, so a late answer is still a right one.
//
// GOMAXPROCS is taken from the environment (bench/run.sh runs 1 and 2),
// not forced to 1 as for the other workloads.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

const (
	fairPublish        = 64
	fairChunk          = 1024
	fairLineBuf        = 8192
	fairChanCap        = 1024
	fnvOffset   uint64 = 0xcbf29ce484222325
	fnvPrime    uint64 = 0x100000001b3
)

// fairCount is the flood's item count, fairHash its running hash (kept so
// that the work is not optimised away); both stored every fairPublish items.
var fairCount, fairHash uint64

func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func fnv1aString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fairnessMain(args []string) {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			runtime.GOMAXPROCS(n)
		}
	}
	f := flags(args, "flood", "addr")
	addr := "127.0.0.1:1235"
	if v, ok := f["addr"]; ok {
		addr = v
	}
	flood := f["flood"]
	switch flood {
	case "lines", "chunks", "chan", "none":
	default:
		usage()
	}
	start := time.Now()
	stats, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "fairness_go: stats listener: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fairness stats=%s\n", stats.Addr())
	go serveStats(stats, start)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fairness_go: %v\n", err)
		os.Exit(1)
	}
	if flood == "chan" {
		ch := make(chan uint64, fairChanCap)
		go func() {
			for i := uint64(0); ; i++ {
				ch <- i
			}
		}()
		go func() {
			var b [8]byte
			h, n := fnvOffset, uint64(0)
			for v := range ch {
				binary.LittleEndian.PutUint64(b[:], v)
				h = fnv1a(h, b[:])
				n++
				if n%fairPublish == 0 {
					atomic.StoreUint64(&fairCount, n)
					atomic.StoreUint64(&fairHash, h)
				}
			}
		}()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "fairness_go: accept: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go fairConn(c.(*net.TCPConn), flood)
	}
}

func serveStats(ln net.Listener, start time.Time) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				n := atomic.LoadUint64(&fairCount)
				if _, err := fmt.Fprintf(c, "count=%d ns=%d\n", n, time.Since(start).Nanoseconds()); err != nil {
					return
				}
			}
		}(c)
	}
}

func fairConn(c *net.TCPConn, flood string) {
	var role [1]byte
	if _, err := io.ReadFull(c, role[:]); err != nil {
		c.Close()
		return
	}
	if role[0] == 'P' {
		echo(c)
		return
	}
	defer c.Close()
	if role[0] != 'F' || c.SetNoDelay(true) != nil {
		return
	}
	h, n := fnvOffset, uint64(0)
	switch flood {
	case "lines":
		r := bufio.NewReaderSize(c, fairLineBuf)
		for {
			s, err := r.ReadString('\n')
			if len(s) > 0 {
				h = fnv1aString(h, s)
				n++
				if n%fairPublish == 0 {
					atomic.StoreUint64(&fairCount, n)
					atomic.StoreUint64(&fairHash, h)
				}
			}
			if err != nil {
				return
			}
		}
	case "chunks":
		b := make([]byte, fairChunk)
		var bytes, reads uint64
		for {
			k, err := c.Read(b)
			if k > 0 {
				h = fnv1a(h, b[:k])
				bytes += uint64(k)
				reads++
				if reads%fairPublish == 0 {
					atomic.StoreUint64(&fairCount, bytes/fairChunk)
					atomic.StoreUint64(&fairHash, h)
				}
			}
			if err != nil {
				return
			}
		}
	}
}

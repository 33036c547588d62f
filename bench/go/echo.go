package main

// Echo server, as bench/src/bin/echo_yieldloop.rs: one goroutine per
// connection, a 4 KiB read buffer, TCP_NODELAY, read and write back until
// the peer closes.

import (
	"fmt"
	"net"
	"os"
	"time"
)

// buf is the read buffer size of every echo server (bench/src/lib.rs BUF).
const buf = 4096

func echoMain(args []string) {
	addr := "127.0.0.1:1235"
	if v, ok := flags(args, "addr")["addr"]; ok {
		addr = v
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo_go: %v\n", err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "echo_go: accept: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go echo(c.(*net.TCPConn))
	}
}

func echo(c *net.TCPConn) {
	defer c.Close()
	if c.SetNoDelay(true) != nil {
		return
	}
	b := make([]byte, buf)
	for {
		n, err := c.Read(b)
		if n > 0 {
			// Write returns only once all n bytes are written, or fails.
			if _, werr := c.Write(b[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

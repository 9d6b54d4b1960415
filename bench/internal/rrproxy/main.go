// Command rrproxy is the load balancer of bench/replicas.sh: a
// round-robin reverse proxy on a loopback port in front of the addresses
// given as arguments. It prints "listening on http://ADDR" and serves
// until its stdin closes.
//
//	go run ./bench/internal/rrproxy 127.0.0.1:8081 127.0.0.1:8082 …
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	backends := os.Args[1:]
	if len(backends) == 0 {
		log.Fatal("usage: rrproxy HOST:PORT…")
	}
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: backends[next.Add(1)%uint64(len(backends))]})
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening on http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

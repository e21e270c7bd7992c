// HTTP/3 load client for the benchmarks, on quic-go (a stack independent of
// quiche). It runs N connections with M concurrent streams each, for a fixed
// request count or a duration, or one fresh connection per request to time
// the handshake, and prints one JSON object with req/s, latency
// percentiles, errors and timeouts. With -mode upload|download it makes one
// large transfer instead (W8, transfer.go).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

type result struct {
	Requests  int64            `json:"requests"`
	Errors    int64            `json:"errors"`
	Timeouts  int64            `json:"timeouts"`
	Seconds   float64          `json:"seconds"`
	RPS       float64          `json:"rps"`
	P50ms     float64          `json:"p50_ms"`
	P90ms     float64          `json:"p90_ms"`
	P99ms     float64          `json:"p99_ms"`
	Statuses  map[string]int64 `json:"statuses"`
	Mode      string           `json:"mode"`
	Conns     int              `json:"conns"`
	Streams   int              `json:"streams"`
	BodyBytes int              `json:"body_bytes"`
	Idle      int              `json:"idle_conns,omitempty"`
	// The client's own CPU time: near Seconds means the client, not the
	// server, set the pace.
	ClientCPU float64 `json:"client_cpu_s"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func newTransport() *http3.Transport {
	return &http3.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}},
		QUICConfig:      &quic.Config{MaxIdleTimeout: 30 * time.Second},
	}
}

func main() {
	url := flag.String("url", "https://127.0.0.1:4433/login", "target URL")
	method := flag.String("method", "GET", "request method")
	bodySize := flag.Int("body", 0, "request body size in bytes")
	conns := flag.Int("conns", 1, "connections")
	streams := flag.Int("streams", 1, "concurrent streams per connection")
	requests := flag.Int64("requests", 1000, "total requests (ignored with -duration)")
	duration := flag.Duration("duration", 0, "run for this long instead of a request count")
	fresh := flag.Bool("fresh", false, "one new connection per request, sequential (time to first byte)")
	timeout := flag.Duration("timeout", 5*time.Second, "per-request timeout")
	idle := flag.Int("idle", 0, "idle connections to open (one request each) and hold during the run")
	idleHold := flag.Duration("idle-hold", 2*time.Second, "pause after the idle connections are open, before the load (for RSS sampling)")
	mode := flag.String("mode", "", "upload or download: one transfer of -bytes on one connection (W8, transfer.go)")
	size := flag.Int64("bytes", 1<<30, "with -mode: bytes to upload, or expected to download")
	proto := flag.String("proto", "h3", "with -mode: h3 (quic-go) or h2 (HTTP/2 over TLS on TCP)")
	gro := flag.Bool("gro", false, "with -mode download -proto h3: read with UDP_GRO, cutting GSO batches into datagrams on this core (gro_linux.go)")
	flag.Parse()

	if *mode != "" {
		if err := runTransfer(*mode, *proto, *url, *size, *timeout, *gro); err != nil {
			fmt.Fprintf(os.Stderr, "loadclient: %v\n", err)
			os.Exit(1)
		}
		return
	}

	body := bytes.Repeat([]byte("x"), *bodySize)
	finished := make(chan struct{})
	var done, errs, timeouts atomic.Int64
	var mu sync.Mutex
	latencies := make([]time.Duration, 0, 1<<16)
	statusCounts := map[int]int64{}

	record := func(lat time.Duration, status int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if ctxErr, ok := err.(interface{ Timeout() bool }); ok && ctxErr.Timeout() {
				timeouts.Add(1)
			} else {
				errs.Add(1)
			}
			return
		}
		latencies = append(latencies, lat)
		statusCounts[status]++
	}

	template, err := http.NewRequest(*method, *url, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadclient: %v\n", err)
		os.Exit(2)
	}
	template.ContentLength = int64(len(body))

	// Requests go straight to the transport's RoundTrip: no redirect
	// following (the spec's clients do not follow /redirect) and less
	// client CPU per request than http.Client.
	one := func(client http.RoundTripper) {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		// A shallow copy of the parsed template: no URL parsing per request.
		req := template.WithContext(ctx)
		if len(body) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		start := time.Now()
		resp, err := client.RoundTrip(req)
		if err != nil {
			record(0, 0, err)
			return
		}
		// Latency is to the first byte of the response (headers received).
		lat := time.Since(start)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		record(lat, resp.StatusCode, nil)
	}

	start := time.Now()
	cpuStart := cpuSeconds()
	deadline := time.Time{}
	if *duration > 0 {
		deadline = start.Add(*duration)
	}
	// SIGTERM/SIGINT: stop sending, finish what is in flight, report.
	var stopped atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sigs; stopped.Store(true) }()
	more := func() bool {
		if stopped.Load() {
			return false
		}
		if !deadline.IsZero() {
			return time.Now().Before(deadline)
		}
		return done.Add(1) <= *requests
	}

	// Idle connections: opened before the load, kept open until the end.
	// "IDLE_READY n" on stderr tells the harness to sample the server's RSS.
	idleOpen := 0
	if *idle > 0 {
		var iwg sync.WaitGroup
		var ok atomic.Int64
		sem := make(chan struct{}, 50)
		for i := 0; i < *idle; i++ {
			iwg.Add(1)
			sem <- struct{}{}
			go func() {
				defer iwg.Done()
				defer func() { <-sem }()
				tr := newTransport()
				tr.QUICConfig = &quic.Config{MaxIdleTimeout: 60 * time.Second, KeepAlivePeriod: 10 * time.Second}
				c := &http.Client{Transport: tr}
				req, _ := http.NewRequest("GET", *url, nil)
				if resp, err := c.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok.Add(1)
				}
				defer func() { go func() { <-finished; tr.Close() }() }()
			}()
		}
		iwg.Wait()
		idleOpen = int(ok.Load())
		fmt.Fprintf(os.Stderr, "IDLE_READY %d\n", idleOpen)
		time.Sleep(*idleHold)
	}

	loadMode := "warm"
	if *fresh {
		loadMode = "fresh"
		for more() {
			tr := newTransport()
			one(tr)
			tr.Close()
		}
	} else {
		var wg sync.WaitGroup
		clients := make([]http.RoundTripper, *conns)
		for c := range clients {
			tr := newTransport()
			defer tr.Close()
			clients[c] = tr
			// Warm each connection so handshakes stay out of the measurement.
			one(clients[c])
		}
		mu.Lock()
		latencies = latencies[:0]
		statusCounts = map[int]int64{}
		mu.Unlock()
		errs.Store(0)
		timeouts.Store(0)
		start = time.Now()
		cpuStart = cpuSeconds()
		if *duration > 0 {
			deadline = start.Add(*duration)
		}
		for _, client := range clients {
			for s := 0; s < *streams; s++ {
				wg.Add(1)
				go func(client http.RoundTripper) {
					defer wg.Done()
					for more() {
						one(client)
					}
				}(client)
			}
		}
		wg.Wait()
	}
	elapsed := time.Since(start).Seconds()
	cpuEnd := cpuSeconds()
	close(finished)

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		i := int(p * float64(len(latencies)-1))
		return float64(latencies[i].Microseconds()) / 1000
	}
	n := int64(len(latencies))
	statuses := map[string]int64{}
	for code, count := range statusCounts {
		statuses[fmt.Sprint(code)] = count
	}
	out := result{
		Requests: n, Errors: errs.Load(), Timeouts: timeouts.Load(), Seconds: elapsed,
		RPS: float64(n) / elapsed, P50ms: pct(0.5), P90ms: pct(0.9), P99ms: pct(0.99),
		Statuses: statuses, Mode: loadMode, Conns: *conns, Streams: *streams, BodyBytes: *bodySize, Idle: idleOpen, ClientCPU: cpuEnd - cpuStart,
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// Soak and fault clients for the HTTP/3 server, on quic-go (a QUIC stack
// independent of quiche). One binary, three modes; each prints one JSON
// object on stdout and exits 0 even when requests failed (the caller judges).
//
//	soak load   -addr 127.0.0.1:4433 -conns 500 -streams 20 -duration 60s
//	    conns connections, each with `streams` goroutines sending mixed
//	    Profile A requests back to back; every answer is checked (status,
//	    and the body or location that route must carry).
//	soak churn  -addr ... -conns 10000 -parallel 64
//	    opens conns connections, one request each, then closes each with
//	    CONNECTION_CLOSE.
//	soak vanish -addr ... -conns 200 -idle 2s
//	    opens conns connections, one request each, then closes each client's
//	    UDP socket without a CONNECTION_CLOSE: the server only learns of it
//	    through its idle timeout. -idle sets the client's max_idle_timeout
//	    transport parameter; the connection's idle timeout is the smaller of
//	    the two sides' (RFC 9000 section 10.1), so a short one here shortens
//	    the server's wait without restarting it.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// One Profile A case: what to send and what the answer must be.
type profileCase struct {
	name     string
	path     string
	header   [2]string
	status   int
	body     string
	location string
}

var profileA = []profileCase{
	{name: "redirect", path: "/redirect", status: 302, location: "/target"},
	{name: "login", path: "/login", status: 200, body: "login succeeded\n"},
	{name: "secret-bearer", path: "/secret", header: [2]string{"authorization", "Bearer h3-demo-token-2f9c"}, status: 200, body: "secret: the owl flies at midnight\n"},
	{name: "secret-cookie", path: "/secret", header: [2]string{"cookie", "session=h3-demo-7b41e0"}, status: 200, body: "secret: the owl flies at midnight\n"},
	{name: "secret-none", path: "/secret", status: 401, body: "unauthorized\n"},
	{name: "not-found", path: "/nothing-here", status: 404, body: "not found\n"},
}

type result struct {
	Mode           string           `json:"mode"`
	Conns          int              `json:"conns"`
	Streams        int              `json:"streams,omitempty"`
	Seconds        float64          `json:"seconds"`
	Requests       int64            `json:"requests"`
	Failed         int64            `json:"failed"`
	RPS            float64          `json:"rps"`
	ConnectsFailed int64            `json:"connects_failed"`
	PerCase        map[string]int64 `json:"per_case"`
	FailureSamples []string         `json:"failure_samples"`
	// CPU seconds this client used (user + system), so a fall in req/s
	// can be told apart: the client's own cost per request, or the server's.
	CPUSeconds float64 `json:"cpu_seconds"`
}

type tally struct {
	requests atomic.Int64
	failed   atomic.Int64
	connFail atomic.Int64
	mu       sync.Mutex
	perCase  map[string]int64
	samples  []string
}

func (t *tally) fail(format string, args ...any) {
	t.failed.Add(1)
	t.mu.Lock()
	if len(t.samples) < 20 {
		t.samples = append(t.samples, fmt.Sprintf(format, args...))
	}
	t.mu.Unlock()
}

func (t *tally) ok(name string) {
	t.mu.Lock()
	t.perCase[name]++
	t.mu.Unlock()
}

func tlsConfig() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}, ServerName: "localhost"}
}

// client is one QUIC connection over its own UDP socket, so a test can
// close the socket under it (vanish) or close the connection (churn).
type client struct {
	udp  *net.UDPConn
	qt   *quic.Transport
	conn *quic.Conn
	h3   *http3.ClientConn
}

var idleTimeout = 30 * time.Second

func dial(ctx context.Context, addr *net.UDPAddr) (*client, error) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	qt := &quic.Transport{Conn: udp}
	conn, err := qt.Dial(ctx, addr, tlsConfig(), &quic.Config{MaxIdleTimeout: idleTimeout, MaxIncomingStreams: -1})
	if err != nil {
		qt.Close()
		udp.Close()
		return nil, err
	}
	tr := &http3.Transport{}
	return &client{udp: udp, qt: qt, conn: conn, h3: tr.NewClientConn(conn)}, nil
}

// close ends the connection with CONNECTION_CLOSE (H3_NO_ERROR).
func (c *client) close() {
	c.conn.CloseWithError(0x100, "")
	c.qt.Close()
	c.udp.Close()
}

// vanish drops the socket: no CONNECTION_CLOSE leaves this host.
func (c *client) vanish() {
	c.udp.Close()
	c.qt.Close()
}

// do sends one Profile A request and checks the answer.
func (c *client) do(ctx context.Context, host string, pc profileCase, t *tally) {
	t.requests.Add(1)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+pc.path, nil)
	if pc.header[0] != "" {
		req.Header.Set(pc.header[0], pc.header[1])
	}
	resp, err := c.h3.RoundTrip(req)
	if err != nil {
		t.fail("%s: %v", pc.name, err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		t.fail("%s: reading body: %v", pc.name, err)
	case resp.StatusCode != pc.status:
		t.fail("%s: status %d, want %d", pc.name, resp.StatusCode, pc.status)
	case pc.body != "" && string(body) != pc.body:
		t.fail("%s: body %q, want %q", pc.name, string(body), pc.body)
	case pc.location != "" && resp.Header.Get("location") != pc.location:
		t.fail("%s: location %q, want %q", pc.name, resp.Header.Get("location"), pc.location)
	default:
		t.ok(pc.name)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: soak load|churn|vanish -addr host:port [options]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addrFlag := fs.String("addr", "127.0.0.1:4433", "server UDP address")
	conns := fs.Int("conns", 1, "connections")
	streams := fs.Int("streams", 1, "load: concurrent streams per connection")
	duration := fs.Duration("duration", 5*time.Second, "load: how long to send")
	parallel := fs.Int("parallel", 64, "churn, vanish: connections being set up at once")
	timeout := fs.Duration("timeout", 20*time.Second, "per-request (and per-handshake) timeout")
	fs.DurationVar(&idleTimeout, "idle", idleTimeout, "max_idle_timeout this client advertises")
	fs.Parse(os.Args[2:])
	addr, err := net.ResolveUDPAddr("udp", *addrFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	host := *addrFlag
	t := &tally{perCase: map[string]int64{}}
	started := time.Now()
	switch mode {
	case "load":
		runLoad(addr, host, *conns, *streams, *duration, *timeout, t)
	case "churn":
		runOnePerConn(addr, host, *conns, *parallel, *timeout, t, (*client).close)
	case "vanish":
		runOnePerConn(addr, host, *conns, *parallel, *timeout, t, (*client).vanish)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
	secs := time.Since(started).Seconds()
	out := result{
		Mode: mode, Conns: *conns, Seconds: secs,
		Requests: t.requests.Load(), Failed: t.failed.Load(), ConnectsFailed: t.connFail.Load(),
		RPS: float64(t.requests.Load()) / secs, PerCase: t.perCase, FailureSamples: t.samples,
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if mode == "load" {
		out.Streams = *streams
	}
	if out.FailureSamples == nil {
		out.FailureSamples = []string{}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// dialCounted connects, counting and recording a failure; nil when it failed.
func dialCounted(ctx context.Context, addr *net.UDPAddr, t *tally) *client {
	c, err := dial(ctx, addr)
	if err != nil {
		t.connFail.Add(1)
		t.fail("connect: %v", err)
		return nil
	}
	return c
}

func runLoad(addr *net.UDPAddr, host string, conns, streams int, duration, timeout time.Duration, t *tally) {
	// Connect everything first, so the whole duration runs at full concurrency.
	clients := make([]*client, conns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range clients {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			clients[i] = dialCounted(ctx, addr, t)
		}(i)
	}
	wg.Wait()
	deadline := time.Now().Add(duration)
	var n atomic.Uint64
	for _, c := range clients {
		if c == nil {
			continue
		}
		for s := 0; s < streams; s++ {
			wg.Add(1)
			go func(c *client) {
				defer wg.Done()
				for time.Now().Before(deadline) {
					pc := profileA[n.Add(1)%uint64(len(profileA))]
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					c.do(ctx, host, pc, t)
					cancel()
				}
			}(c)
		}
	}
	wg.Wait()
	for _, c := range clients {
		if c != nil {
			c.close()
		}
	}
}

func runOnePerConn(addr *net.UDPAddr, host string, conns, parallel int, timeout time.Duration, t *tally, end func(*client)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			c := dialCounted(ctx, addr, t)
			if c == nil {
				return
			}
			c.do(ctx, host, profileA[i%len(profileA)], t)
			end(c)
		}(i)
	}
	wg.Wait()

}

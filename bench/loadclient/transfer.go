// W8's client: one connection, one large transfer. `-mode upload` POSTs
// `-bytes` bytes produced on the fly (never the whole body in memory) and
// checks that the answer is that count; `-mode download` GETs the URL and
// counts the body while discarding it. `-proto h3` (quic-go, as for every
// other workload) or `-proto h2` (Go's net/http: HTTP/2 over TLS on TCP, for
// node:http2); `-gro` reads a download's datagrams with UDP_GRO
// (gro_linux.go). Prints one JSON object: bytes, seconds, MB/s, the client's
// own CPU time.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

type transferResult struct {
	Mode    string  `json:"mode"`
	Proto   string  `json:"proto"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	MBps    float64 `json:"mb_per_s"`
	Status  int     `json:"status"`
	// The client's own CPU time: near Seconds means the client set the pace.
	ClientCPU float64 `json:"client_cpu_s"`
	// Until the response's header section arrived (the connection set up
	// and, for a download, the request's round trip): the rest of Seconds
	// is the body moving.
	HeadSeconds float64 `json:"head_seconds"`
	// Read with UDP_GRO (`-gro`).
	GRO bool `json:"gro,omitempty"`
}

// sizedBody hands out n bytes without filling them: the server only counts
// them, and writing a pattern would charge the client a memset per byte.
type sizedBody struct{ left int64 }

func (b *sizedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > b.left {
		n = int(b.left)
	}
	b.left -= int64(n)
	return n, nil
}

func transferTransport(proto string, gro bool) (http.RoundTripper, error) {
	switch proto {
	case "h3":
		t := newTransport()
		if gro {
			t.Dial = dialWithGRO
		}
		return t, nil
	case "h2":
		// One TCP connection, HTTP/2 only (ForceAttemptHTTP2 with our own
		// TLS config), no gzip: the bytes counted are the bytes sent.
		return &http.Transport{
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
			ForceAttemptHTTP2:  true,
			MaxConnsPerHost:    1,
			DisableCompression: true,
		}, nil
	}
	return nil, fmt.Errorf("-proto takes h3 or h2, got %q", proto)
}

// dialWithGRO connects from a socket read with UDP_GRO (gro_linux.go).
func dialWithGRO(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, err
	}
	conn, err := newGROConn(udp)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("UDP_GRO: %w", err)
	}
	return (&quic.Transport{Conn: conn}).DialEarly(ctx, to, tlsCfg, cfg)
}

func runTransfer(mode, proto, url string, size int64, timeout time.Duration, gro bool) error {
	if gro && (proto != "h3" || mode != "download") {
		return fmt.Errorf("-gro is for -proto h3 -mode download (the client then sends without GSO)")
	}
	rt, err := transferTransport(proto, gro)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var req *http.Request
	switch mode {
	case "upload":
		req, err = http.NewRequestWithContext(ctx, "POST", url, &sizedBody{left: size})
		if err == nil {
			req.ContentLength = size
		}
	case "download":
		req, err = http.NewRequestWithContext(ctx, "GET", url, nil)
	default:
		err = fmt.Errorf("-mode takes upload or download, got %q", mode)
	}
	if err != nil {
		return err
	}

	start := time.Now()
	cpuStart := cpuSeconds()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	head := time.Since(start).Seconds()
	defer resp.Body.Close()
	if (proto == "h2") != (resp.ProtoMajor == 2) {
		return fmt.Errorf("asked for %s, answered over %s", proto, resp.Proto)
	}
	// Large reads: io.Discard's 8 KiB buffer would cost the client more
	// system calls and copies than the server's side of the transfer.
	buf := make([]byte, 256<<10)
	var got int64
	var answer strings.Builder
	for {
		n, rerr := resp.Body.Read(buf)
		got += int64(n)
		if mode == "upload" && answer.Len() < 64 {
			answer.Write(buf[:n])
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("after %d bytes: %w", got, rerr)
		}
	}
	elapsed := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpuStart
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	moved := got
	if mode == "upload" {
		// The server answers the byte count it consumed.
		moved, err = strconv.ParseInt(strings.TrimSpace(answer.String()), 10, 64)
		if err != nil {
			return fmt.Errorf("upload answer %q is not a byte count", answer.String())
		}
	}
	if moved != size {
		return fmt.Errorf("%s moved %d bytes, expected %d", mode, moved, size)
	}
	return json.NewEncoder(os.Stdout).Encode(transferResult{
		Mode: mode, Proto: proto, Bytes: moved, Seconds: elapsed, HeadSeconds: head, MBps: float64(moved) / elapsed / 1e6,
		Status: resp.StatusCode, ClientCPU: cpu, GRO: gro,
	})
}

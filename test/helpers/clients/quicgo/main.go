// Interop client on quic-go (an HTTP/3 stack independent of quiche) and
// webtransport-go, for the interop matrix (test/interop/interop-matrix.test.ts).
//
// Reads a JSON plan on stdin, runs it against plan.base, prints one JSON
// result on stdout. Requests share one HTTP/3 connection and redirects are
// never followed, so a test sees exactly what the server answered.
//
// webtransport-go is pinned to v0.10.0, the newest release that speaks
// draft-02 (SETTINGS_ENABLE_WEBTRANSPORT, :protocol "webtransport") as
// Chromium and this server do; v0.12+ implement draft-15 and require the
// peer's RESET_STREAM_AT transport parameter, which quiche lacks
// (docs/interop.md). quic-go follows from it (v0.59.0).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

type planRequest struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Headers [][2]string `json:"headers"`
	// body_len bytes of "x"; or body_text; or body_pattern bytes of the
	// framework tests' pattern (byte i is i % 251, test/helpers/pattern.ts)
	// generated while sent, with a Content-Length.
	BodyLen     int    `json:"body_len"`
	BodyText    string `json:"body_text"`
	BodyPattern int64  `json:"body_pattern"`
	// Response body bytes kept in "body" (0: all of it); body_len/body_sha256 always cover all.
	BodyKeep int `json:"body_keep"`
}

type planWT struct {
	Path     string `json:"path"`
	Stream   string `json:"stream"`
	Datagram string `json:"datagram"`
}

type plan struct {
	Base         string        `json:"base"`
	Requests     []planRequest `json:"requests"`
	WebTransport *planWT       `json:"webtransport"`
	TimeoutMs    int           `json:"timeout_ms"`
}

type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Proto   string            `json:"proto"`
	Error   string            `json:"error,omitempty"`
	// Every field line, one per value (duplicates kept), names lowercase,
	// sorted by name: Go's http.Header keeps the order of one name's values
	// but not the order across names, nor the case of names.
	HeaderLines [][2]string `json:"header_lines"`
	BodyBytes   int64       `json:"body_bytes"`
	BodySha256  string      `json:"body_sha256"`
	// [ms since the request started, bytes] for each read that returned
	// data (the first 2000), to show when the body arrived.
	Chunks     [][2]float64 `json:"chunks"`
	ChunkCount int          `json:"chunk_count"`
	HeadersMs  float64      `json:"headers_ms"`
	ElapsedMs  float64      `json:"elapsed_ms"`
	SentBytes  int64        `json:"sent_bytes"`
	// When the last request body byte was read by the transport.
	UploadMs float64 `json:"upload_ms"`
}

const patternPeriod = 251

// patternReader yields the first total bytes of the pattern, made as they
// are read: an upload of any size costs no memory.
type patternReader struct {
	total, off int64
	base       []byte
	started    time.Time
	// Written by the transport's goroutine, read by the request's.
	sent     *atomic.Int64
	uploadUs *atomic.Int64
}

func newPatternReader(total int64, started time.Time, sent, uploadUs *atomic.Int64) *patternReader {
	base := make([]byte, 64*1024+patternPeriod)
	for i := range base {
		base[i] = byte(i % patternPeriod)
	}
	return &patternReader{total: total, base: base, started: started, sent: sent, uploadUs: uploadUs}
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.total {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.off < r.total {
		start := int(r.off % patternPeriod)
		m := copy(p[n:], r.base[start:])
		if rest := r.total - r.off; int64(m) > rest {
			m = int(rest)
		}
		n += m
		r.off += int64(m)
	}
	r.sent.Store(r.off)
	if r.off == r.total {
		r.uploadUs.Store(time.Since(r.started).Microseconds())
	}
	return n, nil
}

func msSince(t time.Time) float64 {
	return math.Round(float64(time.Since(t).Microseconds())) / 1000
}

type wtResult struct {
	Status       int    `json:"status"`
	StreamEcho   string `json:"stream_echo"`
	DatagramEcho string `json:"datagram_echo"`
	Error        string `json:"error,omitempty"`
}

type result struct {
	Responses    []response `json:"responses"`
	WebTransport *wtResult  `json:"webtransport,omitempty"`
}

func tlsConfig() *tls.Config {
	// The demo certificate is self-signed: the test pins nothing here, it
	// checks what the server answers, not who it is.
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}}
}

func doRequest(client *http.Client, base string, r planRequest, timeout time.Duration) response {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	started := time.Now()
	var sent, uploadUs atomic.Int64
	var body io.Reader
	switch {
	case r.BodyPattern > 0:
		body = newPatternReader(r.BodyPattern, started, &sent, &uploadUs)
	case r.BodyText != "":
		body = strings.NewReader(r.BodyText)
	case r.BodyLen > 0:
		body = bytes.NewReader(bytes.Repeat([]byte("x"), r.BodyLen))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+r.Path, body)
	if err != nil {
		return response{Error: err.Error()}
	}
	if r.BodyPattern > 0 {
		req.ContentLength = r.BodyPattern
	}
	for _, h := range r.Headers {
		req.Header.Add(h[0], h[1])
	}
	res, err := client.Do(req)
	if err != nil {
		return response{Error: err.Error(), SentBytes: sent.Load(), ElapsedMs: msSince(started)}
	}
	defer res.Body.Close()
	out := response{Status: res.StatusCode, Headers: map[string]string{}, Proto: res.Proto, HeadersMs: msSince(started), HeaderLines: [][2]string{}, Chunks: [][2]float64{}}
	hash := sha256.New()
	var kept []byte
	buf := make([]byte, 64*1024)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			out.ChunkCount++
			if len(out.Chunks) < 2000 {
				out.Chunks = append(out.Chunks, [2]float64{msSince(started), float64(n)})
			}
			out.BodyBytes += int64(n)
			hash.Write(buf[:n])
			if r.BodyKeep == 0 || len(kept) < r.BodyKeep {
				m := n
				if r.BodyKeep > 0 && len(kept)+m > r.BodyKeep {
					m = r.BodyKeep - len(kept)
				}
				kept = append(kept, buf[:m]...)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Error = "reading body: " + err.Error()
			break
		}
	}
	out.Body = string(kept)
	out.BodySha256 = hex.EncodeToString(hash.Sum(nil))
	out.ElapsedMs = msSince(started)
	out.SentBytes = sent.Load()
	out.UploadMs = float64(uploadUs.Load()) / 1000
	names := make([]string, 0, len(res.Header))
	for name, values := range res.Header {
		out.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range res.Header[name] {
			out.HeaderLines = append(out.HeaderLines, [2]string{strings.ToLower(name), v})
		}
	}
	return out
}

func runWebTransport(base string, w *planWT, timeout time.Duration) *wtResult {
	out := &wtResult{}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// v0.10.0 insists on offering reliable reset locally; it does not need
	// the server to support it.
	d := webtransport.Dialer{TLSClientConfig: tlsConfig(), QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}}
	defer d.Close()
	rsp, sess, err := d.Dial(ctx, base+w.Path, nil)
	if rsp != nil {
		out.Status = rsp.StatusCode
	}
	if err != nil {
		out.Error = "dial: " + err.Error()
		return out
	}
	defer sess.CloseWithError(0, "done")
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		out.Error = "open stream: " + err.Error()
		return out
	}
	if _, err := str.Write([]byte(w.Stream)); err != nil {
		out.Error = "stream write: " + err.Error()
		return out
	}
	str.Close()
	echo, err := io.ReadAll(str)
	out.StreamEcho = string(echo)
	if err != nil {
		out.Error = "stream read: " + err.Error()
		return out
	}
	// Datagrams may be lost: send a few times until one comes back.
	for i := 0; i < 5 && out.DatagramEcho == ""; i++ {
		if err := sess.SendDatagram([]byte(w.Datagram)); err != nil {
			out.Error = "send datagram: " + err.Error()
			return out
		}
		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		got, err := sess.ReceiveDatagram(dctx)
		dcancel()
		if err == nil {
			out.DatagramEcho = string(got)
		} else if !errors.Is(err, context.DeadlineExceeded) {
			out.Error = "receive datagram: " + err.Error()
			return out
		}
	}
	return out
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		runRunner() // runner.go
		return
	}
	var p plan
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		fmt.Fprintln(os.Stderr, "invalid plan:", err)
		os.Exit(2)
	}
	timeout := 5 * time.Second
	if p.TimeoutMs > 0 {
		timeout = time.Duration(p.TimeoutMs) * time.Millisecond
	}
	tr := &http3.Transport{TLSClientConfig: tlsConfig()}
	defer tr.Close()
	client := &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res := result{Responses: []response{}}
	for _, r := range p.Requests {
		res.Responses = append(res.Responses, doRequest(client, p.Base, r, timeout))
	}
	if p.WebTransport != nil {
		res.WebTransport = runWebTransport(p.Base, p.WebTransport, timeout)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

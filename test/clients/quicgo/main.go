// Interop client on quic-go (an HTTP/3 stack independent of quiche) and
// webtransport-go, for the interop matrix (test/interop-matrix.test.ts).
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
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

type planRequest struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Headers [][2]string `json:"headers"`
	BodyLen int         `json:"body_len"`
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
	var body io.Reader
	if r.BodyLen > 0 {
		body = bytes.NewReader(bytes.Repeat([]byte("x"), r.BodyLen))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+r.Path, body)
	if err != nil {
		return response{Error: err.Error()}
	}
	for _, h := range r.Headers {
		req.Header.Add(h[0], h[1])
	}
	res, err := client.Do(req)
	if err != nil {
		return response{Error: err.Error()}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	out := response{Status: res.StatusCode, Headers: map[string]string{}, Body: string(data), Proto: res.Proto}
	if err != nil {
		out.Error = "reading body: " + err.Error()
	}
	for name, values := range res.Header {
		out.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
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

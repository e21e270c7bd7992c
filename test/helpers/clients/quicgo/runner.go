// Runner mode (`quicgo-interop runner`), for the interop-runner cases
// (test/helpers/fixtures/runner-files.ts serves the files): reads a plan of QUIC
// connections on stdin, made one after another, each fetching its paths
// concurrently, and prints one JSON result on stdout.
//
// How each feature is done with quic-go v0.59.0 from outside its module;
// what cannot be done is reported as a "cannot: ..." error, never faked:
//   - key_update: quic-go has no API to start a key update. It starts the
//     first one by itself once the handshake is confirmed and 100 packets
//     were sent or received with the first keys
//     (internal/handshake/updatable_aead.go:32 FirstKeyUpdateInterval, used
//     by shouldInitiateKeyUpdate at :318); a qlog tracer on the connection
//     sees it (qlog.KeyUpdated, trigger local_update) and key_updated says
//     whether it happened. A connection with fewer packets gets the error.
//   - chacha20: crypto/tls has no setting for the TLS 1.3 cipher suites
//     (Config.CipherSuites ignores them, crypto/tls/common.go:716); the
//     ClientHello offers defaultCipherSuitesTLS13 (or ...NoAES), which
//     crypto/tls exports for linkname (crypto/tls/defaults.go:78-113, "Do not
//     remove or change the type signature", go.dev/issue/67401). quic-go's own
//     interop client restricts the suites the same way
//     (internal/qtls/cipher_suite.go SetCipherSuite), so this does too; the
//     cipher in the result is the one negotiated.
//   - migrate_after uses the path API (Conn.AddPath, Path.Probe,
//     Path.Switch: connection.go:3081, path_manager_outgoing.go:38,70);
//     migrated is true once the connection sends from the new socket and
//     datagrams arrive on it.
//   - early_data: the first requests go as http3.MethodGet0RTT on a
//     DialEarly connection; if the server rejects 0-RTT they are sent again
//     in 1-RTT on the same connection (see after0RTTRejection).
//
// Plan (stdin): {"host","port","sni","chacha20","timeout" (s, whole plan),
// "connections":[{"paths","resume","early_data","key_update",
// "migrate_after"}]}. Result (stdout, always one object, exit 0):
// {"connections":[{"handshake","resumed","early_data_accepted","cipher",
// "key_updated","migrated","error"}],"responses":[{"connection","path",
// "status","length","sha256","error"}],"error"}; null where not asked or
// not known. SSLKEYLOGFILE, when set, receives the TLS secrets.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "unsafe" // go:linkname

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

//go:linkname tlsDefaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var tlsDefaultCipherSuitesTLS13 []uint16

//go:linkname tlsDefaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var tlsDefaultCipherSuitesTLS13NoAES []uint16

type runnerConnPlan struct {
	Paths        []string `json:"paths"`
	Resume       bool     `json:"resume"`
	EarlyData    bool     `json:"early_data"`
	KeyUpdate    bool     `json:"key_update"`
	MigrateAfter int      `json:"migrate_after"`
}

type runnerPlan struct {
	Host        string           `json:"host"`
	Port        int              `json:"port"`
	SNI         string           `json:"sni"`
	ChaCha20    bool             `json:"chacha20"`
	Timeout     float64          `json:"timeout"`
	Connections []runnerConnPlan `json:"connections"`
}

type runnerConn struct {
	Handshake         bool    `json:"handshake"`
	Resumed           bool    `json:"resumed"`
	EarlyDataAccepted *bool   `json:"early_data_accepted"`
	Cipher            *string `json:"cipher"`
	KeyUpdated        *bool   `json:"key_updated"`
	Migrated          *bool   `json:"migrated"`
	Error             *string `json:"error"`
}

type runnerResponse struct {
	Connection int     `json:"connection"`
	Path       string  `json:"path"`
	Status     int     `json:"status"`
	Length     int64   `json:"length"`
	Sha256     string  `json:"sha256"`
	Error      *string `json:"error"`
	done       bool
}

type runnerResult struct {
	Connections []*runnerConn     `json:"connections"`
	Responses   []*runnerResponse `json:"responses"`
	Error       *string           `json:"error"`
}

func strp(s string) *string { return &s }
func boolp(b bool) *bool    { return &b }

// sessionCache counts the tickets stored, so that a connection is closed
// only once the ticket the next one resumes with has arrived.
type sessionCache struct {
	tls.ClientSessionCache
	puts atomic.Int64
}

func (c *sessionCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.puts.Add(1)
	}
}

// storeOnly is the cache of a connection that is not to resume: it keeps
// the tickets it receives for the next connection, but offers none.
type storeOnly struct{ *sessionCache }

func (storeOnly) Get(string) (*tls.ClientSessionState, bool) { return nil, false }

// keyUpdateTrace is a qlog trace that only notes 1-RTT key updates.
type keyUpdateTrace struct{ local, remote atomic.Bool }

func (t *keyUpdateTrace) AddProducer() qlogwriter.Recorder { return keyUpdateRecorder{t} }
func (t *keyUpdateTrace) SupportsSchemas(string) bool      { return true }

type keyUpdateRecorder struct{ t *keyUpdateTrace }

func (r keyUpdateRecorder) RecordEvent(ev qlogwriter.Event) {
	ku, ok := ev.(qlog.KeyUpdated)
	if !ok || ku.KeyType != qlog.KeyTypeClient1RTT {
		return
	}
	switch ku.Trigger {
	case qlog.KeyUpdateLocal:
		r.t.local.Store(true)
	case qlog.KeyUpdateRemote:
		r.t.remote.Store(true)
	}
}
func (r keyUpdateRecorder) Close() error { return nil }

// countingConn counts the datagrams read from a socket, and those cut
// short by quic-go's read buffer (protocol.MaxPacketBufferSize, 1452 bytes:
// internal/protocol/protocol.go:114). It has none of the socket's OOB
// methods, so quic-go reads it with ReadFrom, without ECN or GSO
// (sys_conn.go basicConn). Both sockets of a migrating connection are
// wrapped: quic-go panics when a connection that uses ECN switches to a
// path on a basicConn ("cannot use ECN with a basicConn", sys_conn.go:138).
type countingConn struct {
	udp       *net.UDPConn
	received  atomic.Int64
	truncated atomic.Int64
}

func (c *countingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, _, flags, addr, err := c.udp.ReadMsgUDP(p, nil)
	if err != nil {
		return n, nil, err
	}
	c.received.Add(1)
	if flags&syscall.MSG_TRUNC != 0 {
		c.truncated.Add(1)
	}
	return n, addr, nil
}
func (c *countingConn) WriteTo(p []byte, addr net.Addr) (int, error) { return c.udp.WriteTo(p, addr) }
func (c *countingConn) Close() error                                 { return c.udp.Close() }
func (c *countingConn) LocalAddr() net.Addr                          { return c.udp.LocalAddr() }
func (c *countingConn) SetDeadline(t time.Time) error                { return c.udp.SetDeadline(t) }
func (c *countingConn) SetReadDeadline(t time.Time) error            { return c.udp.SetReadDeadline(t) }
func (c *countingConn) SetWriteDeadline(t time.Time) error           { return c.udp.SetWriteDeadline(t) }
func (c *countingConn) SetReadBuffer(n int) error                    { return c.udp.SetReadBuffer(n) }
func (c *countingConn) SetWriteBuffer(n int) error                   { return c.udp.SetWriteBuffer(n) }

type runner struct {
	plan   runnerPlan
	raddr  *net.UDPAddr
	tlsCfg *tls.Config
	cache  *sessionCache
	h3     *http3.Transport

	mu  sync.Mutex
	res runnerResult
}

func (r *runner) setConnError(c *runnerConn, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if c.Error != nil {
		msg = *c.Error + "; " + msg
	}
	c.Error = &msg
}

// snapshot encodes the result; unfinished responses get pendingErr.
func (r *runner) snapshot(pendingErr string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.res
	out.Responses = make([]*runnerResponse, len(r.res.Responses))
	for i, resp := range r.res.Responses {
		cp := *resp
		if !cp.done && cp.Error == nil {
			cp.Error = strp(pendingErr)
		}
		out.Responses[i] = &cp
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(runnerResult{Connections: []*runnerConn{}, Responses: []*runnerResponse{}, Error: strp("encoding result: " + err.Error())})
	}
	return b
}

func printRunnerResult(b []byte) {
	os.Stdout.Write(append(b, '\n'))
}

func runRunner() {
	var p runnerPlan
	if err := json.NewDecoder(os.Stdin).Decode(&p); err != nil {
		printRunnerResult(mustJSON(runnerResult{Connections: []*runnerConn{}, Responses: []*runnerResponse{}, Error: strp("invalid plan: " + err.Error())}))
		return
	}
	r := &runner{plan: p, res: runnerResult{Connections: []*runnerConn{}, Responses: []*runnerResponse{}}}
	timeout := 60 * time.Second
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout * float64(time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- r.run(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			r.mu.Lock()
			r.res.Error = strp(err.Error())
			r.mu.Unlock()
		}
		printRunnerResult(r.snapshot("not completed"))
	case <-ctx.Done():
		r.mu.Lock()
		r.res.Error = strp("timeout")
		r.mu.Unlock()
		printRunnerResult(r.snapshot("timeout"))
		// Connections may still be open: do not wait for them.
		os.Exit(0)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (r *runner) run(ctx context.Context) error {
	p := r.plan
	if p.Host == "" || p.Port <= 0 || p.Port > 65535 {
		return errors.New("plan needs host and port")
	}
	raddr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(p.Host, strconv.Itoa(p.Port)))
	if err != nil {
		return fmt.Errorf("resolving %s: %w", p.Host, err)
	}
	r.raddr = raddr
	if p.ChaCha20 {
		// Only this suite in the ClientHello (see the top of this file).
		tlsDefaultCipherSuitesTLS13 = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
		tlsDefaultCipherSuitesTLS13NoAES = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
	}
	r.cache = &sessionCache{ClientSessionCache: tls.NewLRUClientSessionCache(8)}
	r.tlsCfg = tlsConfig()
	r.tlsCfg.ServerName = p.SNI
	if r.tlsCfg.ServerName == "" {
		r.tlsCfg.ServerName = "localhost"
	}
	r.tlsCfg.ClientSessionCache = r.cache
	r.tlsCfg.MinVersion = tls.VersionTLS13
	if f := os.Getenv("SSLKEYLOGFILE"); f != "" {
		// For reading a capture (Wireshark): the TLS secrets, NSS key log format.
		if w, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			defer w.Close()
			r.tlsCfg.KeyLogWriter = w
		}
	}
	r.h3 = &http3.Transport{}

	for i, cp := range p.Connections {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c := &runnerConn{}
		r.mu.Lock()
		r.res.Connections = append(r.res.Connections, c)
		r.mu.Unlock()
		next := i+1 < len(p.Connections) && (p.Connections[i+1].Resume || p.Connections[i+1].EarlyData)
		r.runConn(ctx, i, cp, c, next)
	}
	return nil
}

// udpNetwork picks the socket family of the server's address.
func (r *runner) udpNetwork() string {
	if r.raddr.IP.To4() != nil {
		return "udp4"
	}
	return "udp6"
}

func (r *runner) runConn(ctx context.Context, idx int, cp runnerConnPlan, c *runnerConn, ticketForNext bool) {
	defer func() {
		if v := recover(); v != nil {
			r.setConnError(c, "panic: %v", v)
		}
	}()
	resps := make([]*runnerResponse, len(cp.Paths))
	r.mu.Lock()
	for i, path := range cp.Paths {
		resps[i] = &runnerResponse{Connection: idx, Path: path}
		r.res.Responses = append(r.res.Responses, resps[i])
	}
	if cp.KeyUpdate {
		c.KeyUpdated = boolp(false)
	}
	if cp.MigrateAfter > 0 {
		c.Migrated = boolp(false)
	}
	r.mu.Unlock()
	failAll := func(msg string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, resp := range resps {
			if !resp.done {
				resp.Error = strp(msg)
				resp.done = true
			}
		}
	}

	if (cp.Resume || cp.EarlyData) && r.cache.puts.Load() == 0 {
		r.setConnError(c, "no session ticket received on an earlier connection to resume with")
	}

	udp, err := net.ListenUDP(r.udpNetwork(), nil)
	if err != nil {
		r.setConnError(c, "socket: %v", err)
		failAll("no connection")
		return
	}
	tr := &quic.Transport{Conn: udp}
	if cp.MigrateAfter > 0 {
		tr.Conn = &countingConn{udp: udp}
	}
	defer tr.Close()
	// quic-go gives a handshake up after 5 s without a packet; under the
	// runner's 30 % loss the backed-off retransmissions of both sides can
	// leave a longer gap, so the handshake may take as long as the plan.
	qcfg := &quic.Config{HandshakeIdleTimeout: 30 * time.Second}
	var kt *keyUpdateTrace
	if cp.KeyUpdate {
		kt = &keyUpdateTrace{}
		qcfg.Tracer = func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return kt }
	}
	putsBefore := r.cache.puts.Load()
	tlsCfg := r.tlsCfg.Clone()
	if !cp.Resume && !cp.EarlyData {
		tlsCfg.ClientSessionCache = storeOnly{r.cache}
	}

	var conn *quic.Conn
	if cp.EarlyData {
		conn, err = tr.DialEarly(ctx, r.raddr, tlsCfg, qcfg)
	} else {
		conn, err = tr.Dial(ctx, r.raddr, tlsCfg, qcfg)
	}
	if err != nil {
		r.setConnError(c, "handshake: %v", err)
		failAll("no connection")
		return
	}
	defer conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")

	// After the handshake: what TLS says about it.
	handshakeDone := make(chan struct{})
	go func() {
		defer close(handshakeDone)
		select {
		case <-conn.HandshakeComplete():
		case <-conn.Context().Done():
			return
		case <-ctx.Done():
			return
		}
		st := conn.ConnectionState()
		r.mu.Lock()
		c.Handshake = true
		c.Resumed = st.TLS.DidResume
		c.Cipher = strp(tls.CipherSuiteName(st.TLS.CipherSuite))
		if cp.EarlyData {
			c.EarlyDataAccepted = boolp(st.Used0RTT)
		}
		r.mu.Unlock()
	}()

	cc := r.h3.NewClientConn(conn)
	authority := net.JoinHostPort(r.plan.Host, strconv.Itoa(r.plan.Port))
	// Streams opened by the 0-RTT requests.
	var opened atomic.Int64
	fetch := func(cc *http3.ClientConn, resps []*runnerResponse, early bool) {
		var wg sync.WaitGroup
		for _, resp := range resps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var o *atomic.Int64
				if early {
					o = &opened
				}
				r.fetch(ctx, cc, authority, resp, o)
			}()
		}
		wg.Wait()
	}

	first := resps
	var rest []*runnerResponse
	if cp.MigrateAfter > 0 && cp.MigrateAfter < len(resps) {
		first, rest = resps[:cp.MigrateAfter], resps[cp.MigrateAfter:]
	}
	fetch(cc, first, cp.EarlyData)
	if cp.EarlyData {
		if ncc := r.after0RTTRejection(ctx, conn, opened.Load()); ncc != nil {
			cc = ncc
			// The requests sent in rejected 0-RTT, sent again in 1-RTT.
			var again []*runnerResponse
			r.mu.Lock()
			for _, resp := range first {
				if resp.Error != nil {
					again = append(again, resp)
					resp.Error, resp.done = nil, false
				}
			}
			r.mu.Unlock()
			fetch(cc, again, false)
		}
	}
	<-handshakeDone

	if cp.MigrateAfter > 0 && ctx.Err() == nil && conn.Context().Err() == nil {
		counted, newAddr, err := r.migrate(ctx, conn)
		if err != nil {
			r.setConnError(c, "migration: %v (the rest is fetched on the first path)", err)
		}
		fetch(cc, rest, false)
		if err == nil {
			// Migrated only if packets now arrive on the new socket and
			// the connection sends from it.
			got := counted.received.Load()
			ok := conn.LocalAddr().String() == newAddr.String() && (len(rest) == 0 || got > 0)
			r.mu.Lock()
			c.Migrated = boolp(ok)
			r.mu.Unlock()
			if !ok {
				r.setConnError(c, "migration: switched, but %d datagrams arrived on the new socket %s (connection sends from %s)", got, newAddr, conn.LocalAddr())
			}
		}
	} else {
		fetch(cc, rest, false)
	}

	if ticketForNext && ctx.Err() == nil {
		// The ticket comes after the handshake; give it up to 3 s.
		deadline := time.Now().Add(3 * time.Second)
		for r.cache.puts.Load() == putsBefore && time.Now().Before(deadline) && ctx.Err() == nil && conn.Context().Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if r.cache.puts.Load() == putsBefore {
			r.setConnError(c, "no session ticket received for the next connection")
		}
	}

	if kt != nil {
		local := kt.local.Load()
		r.mu.Lock()
		c.KeyUpdated = boolp(local)
		r.mu.Unlock()
		if !local {
			remote := ""
			if kt.remote.Load() {
				remote = " (the server did update its keys)"
			}
			r.setConnError(c, "cannot: quic-go v0.59.0 has no API to initiate a key update; it starts one by itself only after 100 packets sent or received with the first 1-RTT keys once the handshake is confirmed (github.com/quic-go/quic-go@v0.59.0/internal/handshake/updatable_aead.go:32 FirstKeyUpdateInterval, :318 shouldInitiateKeyUpdate), and this connection did not get there%s", remote)
		}
	}
	if err := conn.Context().Err(); err != nil && ctx.Err() == nil {
		if cause := context.Cause(conn.Context()); cause != nil {
			r.setConnError(c, "connection closed: %v", cause)
		}
	}
}

// migrate moves conn to a new local UDP socket with quic-go's path API.
func (r *runner) migrate(ctx context.Context, conn *quic.Conn) (*countingConn, net.Addr, error) {
	udp, err := net.ListenUDP(r.udpNetwork(), nil)
	if err != nil {
		return nil, nil, err
	}
	counted := &countingConn{udp: udp}
	tr := &quic.Transport{Conn: counted}
	// Closed when the connection ends (runConn's deferred close runs first).
	context.AfterFunc(conn.Context(), func() { tr.Close() })
	path, err := conn.AddPath(tr)
	if err != nil {
		tr.Close()
		return nil, nil, fmt.Errorf("AddPath: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := path.Probe(pctx); err != nil {
		return nil, nil, fmt.Errorf("Probe: %w; %d datagrams arrived on the new socket, %d of them larger than quic-go's 1452-byte read buffer and cut short (so undecryptable)", err, counted.received.Load(), counted.truncated.Load())
	}
	if err := path.Switch(); err != nil {
		return nil, nil, fmt.Errorf("Switch: %w", err)
	}
	counted.received.Store(0)
	// The connection takes the new path when it next sends.
	for i := 0; i < 100 && conn.LocalAddr().String() != udp.LocalAddr().String(); i++ {
		time.Sleep(2 * time.Millisecond)
	}
	return counted, udp.LocalAddr(), nil
}

// after0RTTRejection: when the server rejected the 0-RTT requests of conn
// (Used0RTT false once the handshake is done), the connection to send them
// again on, with a new HTTP/3 client (http3's Transport does not do that,
// v0.59.0 http3/transport.go; nor does a failed request's error say it
// reliably: http3/error.go maybeReplaceError may turn it into
// H3_INCOMPLETE_REQUEST). nil when 0-RTT was accepted or the connection
// failed.
func (r *runner) after0RTTRejection(ctx context.Context, conn *quic.Conn, opened int64) *http3.ClientConn {
	select {
	case <-conn.HandshakeComplete():
	case <-conn.Context().Done():
		return nil
	case <-ctx.Done():
		return nil
	}
	if conn.ConnectionState().Used0RTT {
		return nil
	}
	nc, err := conn.NextConnection(ctx)
	if err != nil {
		return nil
	}
	// Stream IDs start again at 0 after the rejection, and a rejected GET's
	// stream (FIN sent) is not shut down (send_stream.go:641-646
	// closeForShutdown skips a stream that finished writing), so http3's
	// CancelWrite on it still sends a RESET_STREAM with the old ID and final
	// size, which would reset a new request on that ID (quic-go issue 4706).
	// The IDs the 0-RTT requests used are taken by streams that send nothing
	// (a frame of theirs could contradict the stale RESET_STREAM's final
	// size: FINAL_SIZE_ERROR).
	for range opened {
		if _, err := nc.OpenStreamSync(ctx); err != nil {
			return nil
		}
	}
	return r.h3.NewClientConn(nc)
}

// fetch GETs resp.Path; opened non-nil: as a 0-RTT request, counting the
// streams it opens.
func (r *runner) fetch(ctx context.Context, cc *http3.ClientConn, authority string, resp *runnerResponse, opened *atomic.Int64) {
	var status int
	var length int64
	var sum string
	var errMsg *string
	defer func() {
		if v := recover(); v != nil {
			errMsg = strp(fmt.Sprintf("panic: %v", v))
		}
		r.mu.Lock()
		resp.Status, resp.Length, resp.Sha256, resp.Error, resp.done = status, length, sum, errMsg, true
		r.mu.Unlock()
	}()
	method := http.MethodGet
	rctx := ctx
	if opened != nil {
		method = http3.MethodGet0RTT
		// http3 reports WroteRequest once it has a stream for the request.
		rctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { opened.Add(1) }})
	}
	req, err := http.NewRequestWithContext(rctx, method, "https://"+authority+resp.Path, nil)
	if err != nil {
		errMsg = strp(err.Error())
		return
	}
	rsp, err := cc.RoundTrip(req)
	if err != nil {
		errMsg = strp(err.Error())
		return
	}
	defer rsp.Body.Close()
	status = rsp.StatusCode
	// Status and length so far are visible to a timeout's snapshot.
	r.mu.Lock()
	resp.Status = status
	r.mu.Unlock()
	h := sha256.New()
	buf := make([]byte, 64*1024)
	for {
		n, err := rsp.Body.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			length += int64(n)
			r.mu.Lock()
			resp.Length = length
			r.mu.Unlock()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			errMsg = strp("reading body: " + err.Error())
			break
		}
	}
	sum = hex.EncodeToString(h.Sum(nil))
}

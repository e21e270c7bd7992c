// Runner mode (`quicgo-interop runner`), for the interop-runner cases
// (test/helpers/fixtures/runner-files.ts serves the files): reads a plan of QUIC
// connections on stdin, made one after another (or up to "parallel" at
// once), each fetching its paths concurrently (or one after another:
// "sequential"), and prints one JSON result on stdout. The same plan and
// result as runner_client.py (aioquic).
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
//     datagrams arrive on it (a migrating connection has a 100 ms
//     keep-alive, so that an idle one takes the new path too: a PING, and
//     the server's ACK on the new socket). Not sequential, all requests are sent at once
//     and the move starts once migrate_after responses completed, while the
//     others are in flight (during a download when one is large);
//     sequential, it comes between response N and request N+1.
//   - migrate_new_cid false (a move that keeps the destination connection
//     ID, as a NAT rebinding): cannot. The path API always probes a new path
//     with a connection ID of its own (path_manager_outgoing.go:254
//     NextPathToProbe takes it from conn_id_manager.go:254
//     GetConnIDForPath, which hands out an unused one from the queue), and
//     nothing else moves a connection to another socket: the connection's
//     error says "cannot: ..." and it does not move.
//   - peer_addresses: every socket is wrapped (watchedConn) with ReadBatch,
//     which quic-go's oobConn uses instead of its own recvmmsg reader when
//     the conn has it (sys_conn_oob.go:129-136), so ECN and GSO stay on and
//     each datagram's source address, as the kernel gave it, is noted.
//   - early_data: the first requests go as http3.MethodGet0RTT on a
//     DialEarly connection; if the server rejects 0-RTT they are sent again
//     in 1-RTT on the same connection (see after0RTTRejection).
//
// Plan (stdin): {"host","port","sni","chacha20","timeout" (s, whole plan),
// "parallel","ca","client_cert","client_key","connections":[{"paths",
// "resume","early_data","key_update","migrate_after","bind","migrate_bind",
// "migrate_new_cid","sequential"}]}.
//   - ca: a PEM file of CAs; every connection then verifies the server's
//     chain against them and the leaf's name against sni (crypto/tls:
//     RootCAs, ServerName, InsecureSkipVerify false), and a failure fails
//     its handshake. Without it nothing is verified.
//   - client_cert, client_key: PEM files of a client certificate (chain)
//     and its key (tls.Config.Certificates), sent when the server asks for
//     one. crypto/tls sends it only if it fits the server's
//     CertificateRequest (signature algorithms, and certificate_authorities
//     when the server lists any); otherwise it sends none. A certificate
//     the server refuses is refused after the client's side of the TLS 1.3
//     handshake completed: handshake is then true and the error carries the
//     server's alert.
//   - parallel (default 1): up to that many connections at once (a bounded
//     pool; results stay in plan order). Ignored (one at a time) when any
//     connection of the plan has resume or early_data: they need the ticket
//     of the connection before.
//   - bind: the local IP (IPv4 or IPv6, port 0) the first socket binds to,
//     instead of the wildcard.
//   - migrate_bind: with migrate_after, the local IP the socket moved to
//     binds to (port 0): a new address, not only a new port. Without it,
//     the wildcard (a new port).
//   - migrate_new_cid (default true): see above; false cannot be done.
//   - sequential (default false): each request once the response before it
//     completed; with migrate_after N the move comes after N responses
//     completed and before request N+1 is sent. With early_data only the
//     first request goes as 0-RTT.
//   - pause_before, pause_ms (sequential only): wait pause_ms before
//     request number pause_before (0-based, at least 1), the connection
//     open and idle.
//
// Result (stdout, always one object, exit 0):
// {"connections":[{"handshake","resumed","early_data_accepted","cipher",
// "key_updated","migrated","peer_addresses","peer_chain_sha256","error"}],"responses":[
// {"connection","path","status","length","sha256","error"}],"error"}; null
// where not asked or not known. peer_addresses: the sorted, distinct source
// addresses ("ip:port"; IPv6 in brackets, "[fd00::1]:4433"; an IPv4-mapped
// address as plain IPv4) of every datagram the connection received, on
// every socket it used (the first and the one moved to), as the socket
// reported them. peer_chain_sha256: what the server presented in this
// handshake, the SHA-256 (lowercase hex) of each certificate's DER, leaf
// first, also when the verification then failed (crypto/tls's
// CertificateVerificationError keeps them); empty when no Certificate
// message came (a resumed session has none). A failed handshake's error
// says how the connection closed: the code (a TLS alert by crypto/tls's
// name for it), the reason and which side sent it ("handshake failed:
// connection closed: error 0x12a (TLS alert bad certificate) sent by this
// client: tls: failed to verify certificate: ..."). Every planned
// connection and path has its entry, in plan order; one never started
// says "not started". SSLKEYLOGFILE, when set,
// receives the TLS secrets.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "unsafe" // go:linkname

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
	"golang.org/x/net/ipv4"
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
	Bind         string   `json:"bind"`
	MigrateBind  string   `json:"migrate_bind"`
	// nil: true.
	MigrateNewCID *bool `json:"migrate_new_cid"`
	Sequential    bool  `json:"sequential"`
	// Sequential only: wait PauseMs before request PauseBefore (0-based, at least 1).
	PauseBefore int `json:"pause_before"`
	PauseMs     int `json:"pause_ms"`
}

type runnerPlan struct {
	Host        string           `json:"host"`
	Port        int              `json:"port"`
	SNI         string           `json:"sni"`
	ChaCha20    bool             `json:"chacha20"`
	Timeout     float64          `json:"timeout"`
	Parallel    int              `json:"parallel"`
	CA          string           `json:"ca"`
	ClientCert  string           `json:"client_cert"`
	ClientKey   string           `json:"client_key"`
	Connections []runnerConnPlan `json:"connections"`
}

type runnerConn struct {
	Handshake         bool     `json:"handshake"`
	Resumed           bool     `json:"resumed"`
	EarlyDataAccepted *bool    `json:"early_data_accepted"`
	Cipher            *string  `json:"cipher"`
	KeyUpdated        *bool    `json:"key_updated"`
	Migrated          *bool    `json:"migrated"`
	PeerAddresses     []string `json:"peer_addresses"`
	PeerChainSha256   []string `json:"peer_chain_sha256"`
	Error             *string  `json:"error"`
	started           bool
	peers             *peerSet
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

// chainSha256 is peer_chain_sha256: each certificate's DER hashed, leaf first.
func chainSha256(certs []*x509.Certificate) []string {
	out := []string{}
	for _, c := range certs {
		sum := sha256.Sum256(c.Raw)
		out = append(out, hex.EncodeToString(sum[:]))
	}
	return out
}

// closeText is how a connection ended, for its error: the code (a TLS
// alert by name: 0x100 plus the alert, RFC 9001 section 4.8), the reason,
// and which side sent it; quic-go's own text for anything else (an idle
// or handshake timeout sends nothing).
func closeText(err error) string {
	by := func(remote bool) string {
		if remote {
			return "the server"
		}
		return "this client"
	}
	var te *quic.TransportError
	if errors.As(err, &te) {
		name := te.ErrorCode.String()
		if te.ErrorCode.IsCryptoError() {
			name = "TLS alert " + strings.TrimPrefix(tls.AlertError(te.ErrorCode-0x100).Error(), "tls: ")
		}
		reason := te.ErrorMessage
		if reason == "" {
			// What crypto/tls said (a local crypto error keeps it wrapped).
			for _, e := range te.Unwrap() {
				if e != nil && !errors.Is(e, net.ErrClosed) {
					reason = e.Error()
				}
			}
		}
		if reason == "" {
			reason = "(no reason)"
		}
		return fmt.Sprintf("connection closed: error %#x (%s) sent by %s: %s", uint64(te.ErrorCode), name, by(te.Remote), reason)
	}
	var ae *quic.ApplicationError
	if errors.As(err, &ae) {
		reason := ae.ErrorMessage
		if reason == "" {
			reason = "(no reason)"
		}
		return fmt.Sprintf("connection closed: application error %#x sent by %s: %s", uint64(ae.ErrorCode), by(ae.Remote), reason)
	}
	return err.Error()
}

// loadIdentityChecks puts the plan's ca and client certificate into cfg.
func loadIdentityChecks(p runnerPlan, cfg *tls.Config) error {
	if p.CA != "" {
		pem, err := os.ReadFile(p.CA)
		if err != nil {
			return fmt.Errorf("ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("ca: no certificate in %s", p.CA)
		}
		// The chain against these CAs, the leaf's name against ServerName (sni).
		cfg.RootCAs = pool
		cfg.InsecureSkipVerify = false
	}
	if p.ClientCert != "" || p.ClientKey != "" {
		key := p.ClientKey
		if key == "" {
			key = p.ClientCert // the key in the same file
		}
		cert, err := tls.LoadX509KeyPair(p.ClientCert, key)
		if err != nil {
			return fmt.Errorf("client_cert/client_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return nil
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

// peerSet is the source addresses of a connection's datagrams, on all of
// its sockets.
type peerSet struct {
	mu    sync.Mutex
	addrs map[string]struct{}
}

func newPeerSet() *peerSet { return &peerSet{addrs: map[string]struct{}{}} }

func (s *peerSet) add(a net.Addr) {
	var text string
	switch a := a.(type) {
	case *net.UDPAddr:
		// IPv4-mapped as plain IPv4, IPv6 in brackets (netip.AddrPort).
		ap := a.AddrPort()
		text = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
	case nil:
		return
	default:
		text = a.String()
	}
	s.mu.Lock()
	s.addrs[text] = struct{}{}
	s.mu.Unlock()
}

func (s *peerSet) sorted() []string {
	out := []string{}
	if s == nil {
		return out
	}
	s.mu.Lock()
	for a := range s.addrs {
		out = append(out, a)
	}
	s.mu.Unlock()
	sort.Strings(out)
	return out
}

// watchedConn is a UDP socket that counts the datagrams read from it, and
// those cut short by quic-go's read buffer (protocol.MaxPacketBufferSize,
// 1452 bytes: internal/protocol/protocol.go:114), and notes the source
// address of each. It is still an OOBCapablePacketConn (the embedded
// *net.UDPConn), so quic-go keeps ECN and GSO on it, and it has ReadBatch,
// which quic-go's oobConn then reads through instead of making its own
// recvmmsg reader (sys_conn_oob.go:129-136); ReadFrom and ReadMsgUDP are
// watched as well, for any other reader.
type watchedConn struct {
	*net.UDPConn
	batch     *ipv4.PacketConn
	peers     *peerSet
	received  atomic.Int64
	truncated atomic.Int64
}

func newWatchedConn(udp *net.UDPConn, peers *peerSet) *watchedConn {
	return &watchedConn{UDPConn: udp, batch: ipv4.NewPacketConn(udp), peers: peers}
}

func (c *watchedConn) note(addr net.Addr, flags int) {
	c.received.Add(1)
	if flags&syscall.MSG_TRUNC != 0 {
		c.truncated.Add(1)
	}
	c.peers.add(addr)
}

func (c *watchedConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	n, err := c.batch.ReadBatch(ms, flags)
	for i := 0; i < n; i++ {
		c.note(ms[i].Addr, ms[i].Flags)
	}
	return n, err
}

func (c *watchedConn) ReadMsgUDP(b, oob []byte) (int, int, int, *net.UDPAddr, error) {
	n, oobn, flags, addr, err := c.UDPConn.ReadMsgUDP(b, oob)
	if err == nil {
		c.note(addr, flags)
	}
	return n, oobn, flags, addr, err
}

func (c *watchedConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, _, flags, addr, err := c.UDPConn.ReadMsgUDP(p, nil)
	if err != nil {
		return n, nil, err
	}
	c.note(addr, flags)
	return n, addr, nil
}

// listen opens a UDP socket of the server's family, bound to bind (an IP,
// port 0) or the wildcard.
func (r *runner) listen(bind string) (*net.UDPConn, error) {
	var laddr *net.UDPAddr
	if bind != "" {
		ip := net.ParseIP(bind)
		if ip == nil {
			return nil, fmt.Errorf("not an IP address: %q", bind)
		}
		laddr = &net.UDPAddr{IP: ip}
	}
	return net.ListenUDP(r.udpNetwork(), laddr)
}

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
	out.Connections = make([]*runnerConn, len(r.res.Connections))
	for i, c := range r.res.Connections {
		cp := *c
		cp.PeerAddresses = c.peers.sorted()
		if !cp.started && cp.Error == nil {
			cp.Error = strp(notStarted(pendingErr))
		}
		out.Connections[i] = &cp
	}
	out.Responses = make([]*runnerResponse, len(r.res.Responses))
	for i, resp := range r.res.Responses {
		cp := *resp
		if !cp.done && cp.Error == nil {
			if r.res.Connections[cp.Connection].started {
				cp.Error = strp(pendingErr)
			} else {
				cp.Error = strp(notStarted(pendingErr))
			}
		}
		out.Responses[i] = &cp
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(runnerResult{Connections: []*runnerConn{}, Responses: []*runnerResponse{}, Error: strp("encoding result: " + err.Error())})
	}
	return b
}

// notStarted: what a connection never started, and its paths, say.
func notStarted(pendingErr string) string {
	if pendingErr == "not completed" {
		return "not started"
	}
	return pendingErr
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

	// Every connection and path has its entry from the start, in plan order.
	conns := make([]*runnerConn, len(p.Connections))
	resps := make([][]*runnerResponse, len(p.Connections))
	parallel := max(p.Parallel, 1)
	r.mu.Lock()
	for i, cp := range p.Connections {
		c := &runnerConn{PeerAddresses: []string{}, PeerChainSha256: []string{}, peers: newPeerSet()}
		if cp.KeyUpdate {
			c.KeyUpdated = boolp(false)
		}
		if cp.MigrateAfter > 0 {
			c.Migrated = boolp(false)
		}
		conns[i] = c
		r.res.Connections = append(r.res.Connections, c)
		for _, path := range cp.Paths {
			resp := &runnerResponse{Connection: i, Path: path}
			resps[i] = append(resps[i], resp)
			r.res.Responses = append(r.res.Responses, resp)
		}
		if cp.Resume || cp.EarlyData {
			// The ticket of the connection before: one at a time.
			parallel = 1
		}
	}
	r.mu.Unlock()
	// After the entries: a bad file leaves each connection "not started".
	if err := loadIdentityChecks(p, r.tlsCfg); err != nil {
		return fmt.Errorf("cannot load the plan's ca / client_cert / client_key: %w", err)
	}

	// A bounded pool; with one, each connection starts once the one before
	// it ended (and stored its ticket).
	pool := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, cp := range p.Connections {
		select {
		case pool <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
		conns[i].started = true
		r.mu.Unlock()
		next := i+1 < len(p.Connections) && (p.Connections[i+1].Resume || p.Connections[i+1].EarlyData)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-pool }()
			r.runConn(ctx, i, cp, conns[i], resps[i], next)
		}()
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

func (r *runner) runConn(ctx context.Context, idx int, cp runnerConnPlan, c *runnerConn, resps []*runnerResponse, ticketForNext bool) {
	defer func() {
		if v := recover(); v != nil {
			r.setConnError(c, "panic: %v", v)
		}
	}()
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

	udp, err := r.listen(cp.Bind)
	if err != nil {
		r.setConnError(c, "socket: %v", err)
		failAll("no connection")
		return
	}
	// A Transport does not close a socket it was given (transport.go:465):
	// closed here, after the Transport.
	defer udp.Close()
	tr := &quic.Transport{Conn: newWatchedConn(udp, c.peers)}
	defer tr.Close()
	// quic-go gives a handshake up after 5 s without a packet; under the
	// runner's 30 % loss the backed-off retransmissions of both sides can
	// leave a longer gap, so the handshake may take as long as the plan.
	qcfg := &quic.Config{HandshakeIdleTimeout: 30 * time.Second}
	if cp.MigrateAfter > 0 {
		// Path.Switch takes effect on the connection's next turn of its
		// run loop (connection.go:705-711), which nothing starts on a
		// connection with nothing left to send; a keep-alive PING after
		// 100 ms of silence (at least 1.5 PTO, connection.go:854-860) is
		// such a turn: the connection then sends from the new socket, and
		// the server's ACK arrives on it (aioquic's runner sends a PING too).
		qcfg.KeepAlivePeriod = keepAliveWhileMoving
	}
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
		// A failed verification keeps what the server presented.
		var cve *tls.CertificateVerificationError
		if errors.As(err, &cve) {
			r.mu.Lock()
			c.PeerChainSha256 = chainSha256(cve.UnverifiedCertificates)
			r.mu.Unlock()
		}
		r.setConnError(c, "handshake failed: %s", closeText(err))
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
		if !st.TLS.DidResume {
			// Resumed, the server presents no certificate; crypto/tls
			// still reports the chain of the session resumed, which is
			// not what this handshake showed (aioquic reports none either).
			c.PeerChainSha256 = chainSha256(st.TLS.PeerCertificates)
		}
		if cp.EarlyData {
			c.EarlyDataAccepted = boolp(st.Used0RTT)
		}
		r.mu.Unlock()
	}()

	cc := r.h3.NewClientConn(conn)
	authority := net.JoinHostPort(r.plan.Host, strconv.Itoa(r.plan.Port))
	// Streams opened by the 0-RTT requests.
	var opened atomic.Int64
	var mv *move
	if cp.MigrateAfter > 0 {
		mv = &move{r: r, ctx: ctx, conn: conn, c: c, cp: cp, handshakeDone: handshakeDone, done: make(chan struct{})}
	}
	// A response completed: with migrate_after N, the move starts after the
	// Nth (a 0-RTT request that failed is not counted: it may be sent again).
	var completed atomic.Int64
	completedOne := func(resp *runnerResponse, early bool) {
		r.mu.Lock()
		failed := resp.Error != nil
		r.mu.Unlock()
		if early && failed {
			return
		}
		if n := completed.Add(1); mv != nil && n == int64(cp.MigrateAfter) && !cp.Sequential {
			go mv.start()
		}
	}
	fetchOne := func(cc *http3.ClientConn, resp *runnerResponse, early bool) {
		var o *atomic.Int64
		if early {
			o = &opened
		}
		r.fetch(ctx, cc, authority, resp, o)
		completedOne(resp, early)
	}
	// The requests sent in rejected 0-RTT, to send again in 1-RTT on the
	// connection after0RTTRejection gives (nil: none to send again).
	rejected := func(batch []*runnerResponse) (*http3.ClientConn, []*runnerResponse) {
		ncc := r.after0RTTRejection(ctx, conn, opened.Load())
		if ncc == nil {
			return nil, nil
		}
		var again []*runnerResponse
		r.mu.Lock()
		for _, resp := range batch {
			if resp.Error != nil {
				again = append(again, resp)
				resp.Error, resp.done = nil, false
			}
		}
		r.mu.Unlock()
		return ncc, again
	}

	if cp.Sequential {
		// One after another; the move between response N and request N+1.
		for k, resp := range resps {
			if k > 0 && k == cp.PauseBefore {
				time.Sleep(time.Duration(cp.PauseMs) * time.Millisecond)
			}
			if mv != nil && k > 0 && k == cp.MigrateAfter {
				mv.start()
			}
			if ctx.Err() != nil {
				break
			}
			if conn.Context().Err() != nil {
				failAll("connection closed before the request was sent")
				break
			}
			early := cp.EarlyData && k == 0
			fetchOne(cc, resp, early)
			if early {
				if ncc, again := rejected(resps[:1]); ncc != nil {
					cc = ncc
					for _, resp := range again {
						fetchOne(cc, resp, false)
					}
				}
			}
		}
	} else {
		// All at once; the move, once N of them completed, meanwhile.
		var wg sync.WaitGroup
		batch := func(cc *http3.ClientConn, resps []*runnerResponse, early bool) {
			for _, resp := range resps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fetchOne(cc, resp, early)
				}()
			}
		}
		batch(cc, resps, cp.EarlyData)
		if cp.EarlyData {
			wg.Wait()
			if ncc, again := rejected(resps); ncc != nil {
				cc = ncc
				batch(cc, again, false)
			}
		}
		wg.Wait()
	}
	<-handshakeDone
	if mv != nil {
		// Fewer responses than migrate_after completed: move now.
		mv.start()
		mv.finish()
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
			r.setConnError(c, "connection terminated: %s", closeText(cause))
		}
	}
}

// keepAliveWhileMoving: see runConn.
const keepAliveWhileMoving = 100 * time.Millisecond

// move is the migration of one connection (migrate_after): started once,
// from the response that completes the Nth (not sequential, meanwhile the
// others go on), between two requests (sequential) or after the last.
type move struct {
	r             *runner
	ctx           context.Context
	conn          *quic.Conn
	c             *runnerConn
	cp            runnerConnPlan
	handshakeDone <-chan struct{}

	once sync.Once
	done chan struct{}
	// Set by run, read after done.
	ran     bool
	err     error
	counted *watchedConn
	newAddr net.Addr
}

// start moves the connection, once; it returns when the move is over.
func (m *move) start() {
	m.once.Do(func() {
		defer close(m.done)
		m.run()
	})
	<-m.done
}

func (m *move) run() {
	<-m.handshakeDone
	if m.ctx.Err() != nil || m.conn.Context().Err() != nil {
		return
	}
	m.ran = true
	if m.cp.MigrateNewCID != nil && !*m.cp.MigrateNewCID {
		m.err = errors.New("cannot: quic-go v0.59.0 moves a connection to another socket only with its path API, which probes the new path with a new connection ID (github.com/quic-go/quic-go@v0.59.0/path_manager_outgoing.go:254 NextPathToProbe takes it from conn_id_manager.go:254 GetConnIDForPath); a move that keeps the connection ID (migrate_new_cid false) cannot be asked for, so the connection did not move")
		return
	}
	m.counted, m.newAddr, m.err = m.r.migrate(m.ctx, m.conn, m.cp.MigrateBind, m.c.peers)
}

// finish, once the responses are done: whether the connection moved.
func (m *move) finish() {
	if !m.ran {
		return
	}
	if m.err != nil {
		if strings.HasPrefix(m.err.Error(), "cannot:") {
			m.r.setConnError(m.c, "%v", m.err)
		} else {
			m.r.setConnError(m.c, "migration: %v (the rest is fetched on the first path)", m.err)
		}
		return
	}
	// Migrated only if the connection sends from the new socket and
	// datagrams arrive on it: at the latest a keep-alive PING and the
	// server's ACK of it (see runConn), given up to 3 s.
	moved := func() bool {
		return m.conn.LocalAddr().String() == m.newAddr.String() && m.counted.received.Load() > 0
	}
	for deadline := time.Now().Add(3 * time.Second); !moved() && time.Now().Before(deadline) && m.ctx.Err() == nil && m.conn.Context().Err() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
	got := m.counted.received.Load()
	ok := moved()
	m.r.mu.Lock()
	m.c.Migrated = boolp(ok)
	m.r.mu.Unlock()
	if !ok {
		m.r.setConnError(m.c, "migration: switched, but %d datagrams arrived on the new socket %s (connection sends from %s)", got, m.newAddr, m.conn.LocalAddr())
	}
}

// migrate moves conn to a new local UDP socket (bound to bind, an IP, or
// the wildcard) with quic-go's path API.
func (r *runner) migrate(ctx context.Context, conn *quic.Conn, bind string, peers *peerSet) (*watchedConn, net.Addr, error) {
	udp, err := r.listen(bind)
	if err != nil {
		return nil, nil, err
	}
	counted := newWatchedConn(udp, peers)
	tr := &quic.Transport{Conn: counted}
	// Closed when the connection ends (runConn's deferred close runs first).
	context.AfterFunc(conn.Context(), func() { tr.Close(); udp.Close() })
	path, err := conn.AddPath(tr)
	if err != nil {
		tr.Close()
		udp.Close()
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

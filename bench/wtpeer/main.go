// W9's Go side, on webtransport-go (v0.10.0, the newest release that speaks
// the draft this server serves; docs/interop.md):
//
//	wtpeer server -port P -cert C -key K
//	    a WebTransport echo server, the peer W9 compares with: each
//	    bidirectional stream is copied back to itself, each datagram sent back
//	wtpeer stream -url U -bytes N
//	    one session, one bidirectional stream: writes N bytes while reading the
//	    echo; prints MB/s from the first byte written to the last echoed
//	wtpeer datagram -url U -duration D -window W
//	    one session: keeps W datagrams in flight (a lost one is replaced after
//	    100 ms) and counts the echoes that come back within D
//
// The client subcommands print one JSON object.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wtpeer server|stream|datagram [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2:])
	case "stream":
		streamClient(os.Args[2:])
	case "datagram":
		datagramClient(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "unknown subcommand", os.Args[1])
		os.Exit(2)
	}
}

func server(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	port := fs.Int("port", 4433, "UDP port")
	cert := fs.String("cert", "", "PEM certificate")
	key := fs.String("key", "", "PEM key")
	fs.Parse(args)
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	s := webtransport.Server{
		H3: &http3.Server{
			Addr:       fmt.Sprintf("127.0.0.1:%d", *port),
			Handler:    mux,
			TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}}),
			QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
		},
		CheckOrigin: func(*http.Request) bool { return true },
	}
	webtransport.ConfigureHTTP3Server(s.H3)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.Upgrade(w, r)
		if err != nil {
			w.WriteHeader(500)
			return
		}
		go func() {
			for {
				str, err := sess.AcceptStream(sess.Context())
				if err != nil {
					return
				}
				go func() {
					io.Copy(str, str)
					str.Close()
				}()
			}
		}()
		for {
			d, err := sess.ReceiveDatagram(sess.Context())
			if err != nil {
				return
			}
			sess.SendDatagram(d)
		}
	})
	go func() {
		// The launcher's protocol: one JSON line once the socket is bound.
		time.Sleep(200 * time.Millisecond)
		fmt.Printf("{\"listening\":%d,\"pid\":%d}\n", *port, os.Getpid())
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Close()
		os.Exit(0)
	}()
	if err := s.ListenAndServe(); err != nil {
		log.Fatal(err)
	}
}

func dial(ctx context.Context, url string) *webtransport.Session {
	d := webtransport.Dialer{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}},
		QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	rsp, sess, err := d.Dial(ctx, url, nil)
	if err != nil {
		fail("dial: %v", err)
	}
	if rsp.StatusCode != 200 {
		fail("status %d", rsp.StatusCode)
	}
	return sess
}

func fail(format string, args ...any) {
	json.NewEncoder(os.Stdout).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

func streamClient(args []string) {
	fs := flag.NewFlagSet("stream", flag.ExitOnError)
	url := fs.String("url", "", "https://host:port/path")
	total := fs.Int64("bytes", 64<<20, "bytes to send and have echoed")
	timeout := fs.Duration("timeout", 120*time.Second, "give up after")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	sess := dial(ctx, *url)
	defer sess.CloseWithError(0, "done")
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		fail("open stream: %v", err)
	}
	chunk := bytes.Repeat([]byte{0x5a}, 64<<10)
	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		for sent := int64(0); sent < *total; {
			n := int64(len(chunk))
			if *total-sent < n {
				n = *total - sent
			}
			if _, err := str.Write(chunk[:n]); err != nil {
				writeErr <- err
				return
			}
			sent += n
		}
		writeErr <- str.Close()
	}()
	buf := make([]byte, 256<<10)
	var got int64
	for got < *total {
		n, err := str.Read(buf)
		got += int64(n)
		if err != nil {
			break
		}
	}
	seconds := time.Since(start).Seconds()
	if err := <-writeErr; err != nil {
		fail("write: %v", err)
	}
	if got != *total {
		fail("echoed %d of %d bytes", got, *total)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"mode": "stream", "bytes": got, "seconds": seconds, "mb_per_s": float64(got) / seconds / 1e6})
}

func datagramClient(args []string) {
	fs := flag.NewFlagSet("datagram", flag.ExitOnError)
	url := fs.String("url", "", "https://host:port/path")
	duration := fs.Duration("duration", 5*time.Second, "how long to count")
	window := fs.Int("window", 16, "datagrams in flight")
	size := fs.Int("size", 64, "payload bytes")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *duration+10*time.Second)
	defer cancel()
	sess := dial(ctx, *url)
	defer sess.CloseWithError(0, "done")
	payload := bytes.Repeat([]byte{0x61}, *size)
	var echoed, sent atomic.Int64
	var last atomic.Int64 // unix nanos of the latest echo
	last.Store(time.Now().UnixNano())
	send := func() {
		if err := sess.SendDatagram(payload); err == nil {
			sent.Add(1)
		}
	}
	start := time.Now()
	deadline := start.Add(*duration)
	for i := 0; i < *window; i++ {
		send()
	}
	// Lost datagrams: top the window up when nothing came back for 100 ms.
	go func() {
		for time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			if time.Since(time.Unix(0, last.Load())) > 100*time.Millisecond {
				for i := 0; i < *window; i++ {
					send()
				}
			}
		}
	}()
	for time.Now().Before(deadline) {
		rctx, rcancel := context.WithDeadline(ctx, deadline)
		_, err := sess.ReceiveDatagram(rctx)
		rcancel()
		if err != nil {
			break
		}
		echoed.Add(1)
		last.Store(time.Now().UnixNano())
		send()
	}
	seconds := time.Since(start).Seconds()
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"mode": "datagram", "round_trips": echoed.Load(), "sent": sent.Load(), "seconds": seconds,
		"per_s": float64(echoed.Load()) / seconds, "window": *window,
	})
}

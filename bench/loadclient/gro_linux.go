// A UDP socket read with UDP_GRO, for W8's download with `-gro`.
//
// Why: on loopback the receiver's kernel work runs on the sender's core, in
// the softirq its sendmsg raises. quic-go reads one datagram per buffer, so
// each GSO batch a server sends is cut into datagrams and queued one by one
// to this socket, and that work (and freeing the datagrams after this
// process has read them) lands on the server's core: about 17 % of it in a
// download through createSecureServer (docs/design.md, "W8's download and
// the client's receive on loopback"). With UDP_GRO set, the kernel queues a
// GSO batch as it came and this conn cuts it into datagrams in user space,
// on the client's core, as a client across a network would receive them on
// its own machine. node:http2's TCP client gets the same from loopback's
// 64 KiB segments already.
//
// quic-go drives it as a plain net.PacketConn (one datagram per ReadFrom,
// no GSO on send: a download's client sends only acknowledgements). It
// must not have ReadMsgUDP, or quic-go would read the socket itself.
package main

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type groConn struct {
	udp *net.UDPConn
	raw syscall.RawConn
	// One receive: up to 64 KiB of datagrams of `seg` bytes each (the last
	// may be shorter), handed out from `next`.
	buf  []byte
	oob  []byte
	n    int
	next int
	seg  int
	from net.Addr
}

func newGROConn(c *net.UDPConn) (*groConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	return &groConn{udp: c, raw: raw, buf: make([]byte, 65535), oob: make([]byte, 128)}, nil
}

// ReadFrom hands out the next datagram of the last receive, or receives.
func (c *groConn) ReadFrom(p []byte) (int, net.Addr, error) {
	if c.next >= c.n {
		if err := c.receive(); err != nil {
			return 0, nil, err
		}
	}
	end := c.next + c.seg
	if end > c.n {
		end = c.n
	}
	if end-c.next > len(p) {
		// Never happens with quic-go's buffers (its largest datagram);
		// dropping it is what the kernel would do with a short buffer.
		c.next = end
		return 0, c.from, errors.New("datagram larger than the read buffer")
	}
	k := copy(p, c.buf[c.next:end])
	c.next = end
	return k, c.from, nil
}

func (c *groConn) receive() error {
	var n, oobn int
	var from unix.Sockaddr
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, _, from, rerr = unix.Recvmsg(int(fd), c.buf, c.oob, 0)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	c.n, c.next, c.seg = n, 0, n
	switch a := from.(type) {
	case *unix.SockaddrInet4:
		c.from = &net.UDPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *unix.SockaddrInet6:
		c.from = &net.UDPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	}
	msgs, err := unix.ParseSocketControlMessage(c.oob[:oobn])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4 {
			// The segment size, an int in the kernel's byte order.
			if s := int(binary.NativeEndian.Uint32(m.Data)); s > 0 {
				c.seg = s
			}
		}
	}
	return nil
}

func (c *groConn) WriteTo(p []byte, addr net.Addr) (int, error) { return c.udp.WriteTo(p, addr) }
func (c *groConn) Close() error                                 { return c.udp.Close() }
func (c *groConn) LocalAddr() net.Addr                          { return c.udp.LocalAddr() }
func (c *groConn) SetDeadline(t time.Time) error                { return c.udp.SetDeadline(t) }
func (c *groConn) SetReadDeadline(t time.Time) error            { return c.udp.SetReadDeadline(t) }
func (c *groConn) SetWriteDeadline(t time.Time) error           { return c.udp.SetWriteDeadline(t) }
func (c *groConn) SetReadBuffer(n int) error                    { return c.udp.SetReadBuffer(n) }
func (c *groConn) SetWriteBuffer(n int) error                   { return c.udp.SetWriteBuffer(n) }

// SyscallConn lets quic-go set the don't-fragment bit (its path MTU probes).
func (c *groConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Package faultproxy is a TCP proxy on loopback that tests put between a
// client and a server to cut the traffic between them: a network partition
// without leaving the machine.
package faultproxy

import (
	"net"
	"sync"
)

// Proxy forwards connections from its loopback address to a target while it
// is healed. Cut stops every byte in both directions, on open connections and
// new ones alike, without closing anything, as a partition does; Heal lets the
// bytes flow again.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	open   chan struct{} // closed while traffic flows
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New listens on 127.0.0.1 at a free port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.open)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut stops all traffic through the proxy.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Heal lets traffic through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	select {
	case <-p.open:
	default:
		close(p.open)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			return
		}
		p.wg.Add(1)
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	defer p.untrack(in)
	<-p.gate() // a connection opened during a cut hangs, as its SYN would
	out, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(out) {
		return
	}
	defer p.untrack(out)
	done := make(chan struct{}, 2)
	go func() { p.pipe(out, in); done <- struct{}{} }()
	go func() { p.pipe(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	<-done
}

// pipe copies src to dst, holding each chunk while the proxy is cut.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection: either way, done
			return
		}
	}
}

// Package faultproxy is a TCP proxy for fault tests: it stands between a
// program and a server (a database, say) and can cut the line or turn it into
// a blackhole while both ends stay up, which stopping the server cannot show.
//
//	p := faultproxy.Start(t, "unix", socketPath) // or "tcp", "host:port"
//	dsn := "postgres://postgres@" + p.Addr() + "/db?sslmode=disable"
//	p.Cut()       // every connection closed, new ones refused
//	p.Blackhole() // connections stay open, no byte gets through either way
//	p.Restore()   // new connections work again; held bytes flow again
//
// It listens on 127.0.0.1 only.
package faultproxy

import (
	"net"
	"sync"
	"testing"
)

// Mode is what the proxy does with connections.
type Mode int

// The modes.
const (
	// Pass forwards every byte both ways.
	Pass Mode = iota
	// Cutting closes every connection and accepts new ones only to close
	// them: to the program, the server went away (connection reset).
	Cutting
	// Blackholing keeps connections open, new ones too, and forwards
	// nothing: to the program, the network dropped every packet. Bytes read
	// meanwhile are held and sent on Restore, as a network that comes back
	// delivers what TCP retransmits.
	Blackholing
)

// Proxy forwards connections made to Addr to the upstream address.
type Proxy struct {
	ln                net.Listener
	network, upstream string

	mu    sync.Mutex
	cond  *sync.Cond // broadcast when mode changes or the proxy closes
	mode  Mode
	conns map[net.Conn]struct{} // both ends of every open pair
	done  bool
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1, forwarding to upstream on
// network ("tcp" or "unix"), and closes the proxy when t ends.
func Start(t testing.TB, network, upstream string) *Proxy {
	t.Helper()
	p, err := Listen(network, upstream)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Listen is Start without a test: Close it when done.
func Listen(network, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, network: network, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() { p.set(Cutting) }

// Blackhole stops every byte, on open connections and new ones, until Restore.
func (p *Proxy) Blackhole() { p.set(Blackholing) }

// Restore forwards again: new connections work, and held bytes flow.
func (p *Proxy) Restore() { p.set(Pass) }

// Mode returns the proxy's mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *Proxy) set(m Mode) {
	p.mu.Lock()
	p.mode = m
	if m == Cutting {
		p.closeAllLocked()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *Proxy) closeAllLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Close stops listening, closes every connection and waits for the proxy's
// goroutines. Calling it twice is harmless.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	_ = p.ln.Close()
	p.closeAllLocked()
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve pairs one client connection with an upstream one.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		_ = client.Close()
		return
	}
	// A blackhole connects nothing: the client's bytes wait for Restore
	// before the upstream is dialled, as a SYN would be retransmitted.
	if !p.waitPass() {
		p.drop(client)
		return
	}
	up, err := net.Dial(p.network, p.upstream)
	if err != nil {
		p.drop(client)
		return
	}
	if !p.track(up) {
		_ = up.Close()
		p.drop(client)
		return
	}
	var pair sync.WaitGroup
	pair.Add(2)
	go func() { defer pair.Done(); p.pipe(up, client) }()
	go func() { defer pair.Done(); p.pipe(client, up) }()
	pair.Wait()
}

// track adds c to the open connections, or says no while cutting or closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.mode == Cutting {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// waitPass waits while the proxy blackholes; false once it cuts or closes.
func (p *Proxy) waitPass() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == Blackholing && !p.done {
		p.cond.Wait()
	}
	return p.mode == Pass && !p.done
}

// pipe copies src to dst, holding each read while the proxy blackholes, and
// closes both ends when either fails (so the peer sees the cut).
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		p.drop(src)
		p.drop(dst)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a cut: either end gone ends the pair
		}
	}
}

package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// liveOptions tune the hub; tests shorten them.
type liveOptions struct {
	tick         time.Duration // one round of queries and at most one message per client
	sendBuffer   int           // messages queued per client before it counts as slow and is dropped
	writeWait    time.Duration // a write that takes longer drops the client
	writeBuffer  int           // the socket's send buffer in bytes; 0: the system's
	pongWait     time.Duration // a client silent for longer (no pong) is dropped
	pingPeriod   time.Duration
	idleStop     time.Duration // the hub stops this long after its last client left
	maxLoads     int           // distinct views loaded per tick; the rest wait their turn
	queryTimeout time.Duration
}

func defaultLiveOptions() liveOptions {
	return liveOptions{tick: 500 * time.Millisecond, sendBuffer: 8, writeWait: 10 * time.Second,
		pongWait: 60 * time.Second, pingPeriod: 54 * time.Second, idleStop: 5 * time.Second,
		maxLoads: 32, queryTimeout: 5 * time.Second}
}

// liveHub pushes changes to the websocket clients (the gorilla chat example's
// hub). Its goroutine owns the client set and all view state; it runs while
// any client is connected and stops by itself a little after the last leaves.
//
// Changes may be made by any node, so the hub polls the store itself: each tick
// (500 ms) it reads the queues and nodes once, runs each distinct view's query
// once whatever the number of clients showing it, and sends each client one
// message with what changed since the last one. So a client gets at most two
// messages a second however busy the queues are, and the store sees one set of
// queries per tick, not one per client. A client that does not keep up (its
// queue of messages is full) is dropped, never waited for; its page reconnects
// and gets a fresh snapshot.
type liveHub struct {
	src  *views
	opts liveOptions
	log  *slog.Logger

	mu      sync.Mutex
	running bool
	closing bool // the server is stopping: say goodbye to everyone, take nobody new
	joins   []*liveClient
	leaves  []*liveClient
	kick    chan struct{}  // a client joined: send its snapshot without waiting for the tick
	pumps   sync.WaitGroup // write pumps still running

	// Owned by the run goroutine.
	clients    map[*liveClient]struct{}
	views      map[string]*liveViewState
	fields     *fieldSet // the newest fields
	sharedData shared
	sharedAt   time.Time
	sharedNext time.Time
}

// liveViewState is one distinct view and its newest content.
type liveViewState struct {
	view    liveView
	state   *viewState // nil until first read; never changed once made
	readAt  time.Time
	nextRun time.Time
}

// fieldSet is one reading of the live fields; never changed once made, so
// clients can point at what they were last sent.
type fieldSet struct{ m map[string]string }

func newLiveHub(src *views, opts liveOptions) *liveHub {
	return &liveHub{src: src, opts: opts, log: src.log, kick: make(chan struct{}, 1)}
}

// join adds a client; its snapshot follows at once. It starts the hub if needed.
// While the server stops, the client is told to go away instead.
func (h *liveHub) join(c *liveClient) {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		c.bye = websocket.CloseGoingAway
		close(c.send)
		return
	}
	h.joins = append(h.joins, c)
	if !h.running {
		h.running = true
		go h.run()
	}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// leave removes a client whose connection ended.
func (h *liveHub) leave(c *liveClient) {
	h.mu.Lock()
	h.leaves = append(h.leaves, c)
	h.mu.Unlock()
}

// shutdown tells every client to go away (close code 1001: the page
// reconnects, to another node behind a balancer or to this one once it is
// back), refuses new ones, and waits until the goodbyes are written or ctx
// ends. http.Server.Shutdown does not track websockets, so the server calls
// this after it.
func (h *liveHub) shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
	done := make(chan struct{})
	go func() { h.pumps.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("live updates: connections still open after the shutdown wait: %w", ctx.Err())
	}
}

// isRunning reports whether the hub goroutine runs (tests check it stops).
func (h *liveHub) isRunning() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

func (h *liveHub) run() {
	h.clients = map[*liveClient]struct{}{}
	h.views = map[string]*liveViewState{}
	h.fields, h.sharedAt, h.sharedNext = nil, time.Time{}, time.Time{}
	tick := time.NewTicker(h.opts.tick)
	defer tick.Stop()
	var idleSince time.Time
	for {
		full := false
		select {
		case <-tick.C:
			full = true
		case <-h.kick:
		}
		h.mu.Lock()
		joins, leaves := h.joins, h.leaves
		h.joins, h.leaves = nil, nil
		h.mu.Unlock()
		for _, c := range joins {
			c.fresh = true
			h.clients[c] = struct{}{}
		}
		for _, c := range leaves {
			h.drop(c)
		}
		h.mu.Lock()
		closing := h.closing
		h.mu.Unlock()
		if closing {
			for c := range h.clients {
				c.bye = websocket.CloseGoingAway
				h.drop(c)
			}
			h.mu.Lock()
			for _, c := range h.joins { // joined since this round began
				c.bye = websocket.CloseGoingAway
				close(c.send)
			}
			h.joins, h.leaves = nil, nil
			h.clients, h.views, h.fields, h.sharedData = nil, nil, nil, shared{}
			h.running = false
			h.mu.Unlock()
			return
		}
		if len(h.clients) == 0 {
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if time.Since(idleSince) >= h.opts.idleStop {
				h.mu.Lock()
				if len(h.joins) == 0 {
					// Let go of the state before a new run may start.
					h.clients, h.views, h.fields, h.sharedData = nil, nil, nil, shared{}
					h.running = false
					h.mu.Unlock()
					return
				}
				h.mu.Unlock()
			}
			continue
		}
		idleSince = time.Time{}
		h.update(full)
	}
}

// drop removes a client and closes its queue, which makes its write pump say
// goodbye and close the connection.
func (h *liveHub) drop(c *liveClient) {
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.send)
	}
}

// update reads what changed and sends it. On a full tick every due view is
// read and each client gets what changed since what it was last sent, in one
// message. A joining client's snapshot is read after it joined (unless a read
// since then serves), so a page never goes back to older data than it was
// rendered with; a tick made for joining clients sends them their snapshots
// only, and nobody else gets a second message within the tick.
func (h *liveHub) update(full bool) {
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.queryTimeout)
	defer cancel()
	now := time.Now()
	// The newest join among clients still waiting for their snapshot, overall
	// and per view: data read before it may predate what that page shows.
	var lastJoin time.Time
	joinedAt := map[string]time.Time{}
	wanted := map[string]liveView{}
	for c := range h.clients {
		wanted[c.view.key] = c.view
		if c.fresh {
			lastJoin = latest(lastJoin, c.joined)
			joinedAt[c.view.key] = latest(joinedAt[c.view.key], c.joined)
		}
	}

	if h.fields == nil || (full && !now.Before(h.sharedNext)) || h.sharedAt.Before(lastJoin) {
		start := time.Now()
		sh, fields, err := h.readShared(ctx)
		if err != nil {
			h.log.Warn("live updates: reading queues and nodes", "err", err)
		} else {
			h.sharedData, h.fields, h.sharedAt = sh, &fieldSet{m: fields}, now
		}
		h.sharedNext = now.Add(max(h.opts.tick, 4*time.Since(start)))
	}

	// Forget the views nobody shows any more.
	for k := range h.views {
		if _, ok := wanted[k]; !ok {
			delete(h.views, k)
		}
	}
	var due []*liveViewState
	for k, v := range wanted {
		vs := h.views[k]
		if vs == nil {
			vs = &liveViewState{view: v}
			h.views[k] = vs
		}
		switch {
		case vs.state == nil,
			full && !now.Before(vs.nextRun),
			vs.readAt.Before(joinedAt[k]):
			due = append(due, vs)
		}
	}
	// New views first, then the longest waiting; a bounded number per tick.
	sort.Slice(due, func(i, j int) bool {
		if (due[i].state == nil) != (due[j].state == nil) {
			return due[i].state == nil
		}
		return due[i].nextRun.Before(due[j].nextRun)
	})
	for i, vs := range due {
		if i >= h.opts.maxLoads || ctx.Err() != nil {
			break
		}
		start := time.Now()
		st, err := h.src.loadView(ctx, vs.view, h.sharedData)
		vs.nextRun = now.Add(max(vs.view.minInterval(h.opts.tick), 4*time.Since(start)))
		if err != nil {
			h.log.Debug("live updates: reading a view", "view", vs.view.key, "err", err)
			continue
		}
		vs.state, vs.readAt = &st, now
	}
	h.send(full)
}

// send gives each client what changed since it was last sent (a snapshot to a
// joining one), on a full tick; on a joining tick only the joining clients get
// theirs. Clients that were sent the same things get the same bytes, encoded
// once: with a hundred clients on a few views a tick encodes a few messages.
func (h *liveHub) send(full bool) {
	type baseline struct {
		view   string
		fields *fieldSet
		state  *viewState
	}
	encoded := map[baseline][]byte{}
	for c := range h.clients {
		vs := h.views[c.view.key]
		if vs.state == nil || h.fields == nil {
			continue // its snapshot follows once the view could be read
		}
		var msg []byte
		switch {
		case c.fresh:
			msg = h.encode(snapshotOf(h.fields.m, *vs.state))
		case full:
			b := baseline{c.view.key, c.sentFields, c.sentView}
			var ok bool
			if msg, ok = encoded[b]; !ok {
				m := diffView(*c.sentView, *vs.state)
				m.Fields = diffFields(c.sentFields.m, h.fields.m)
				if !m.empty() {
					msg = h.encode(m)
				}
				encoded[b] = msg
			}
		default:
			continue
		}
		c.fresh, c.sentFields, c.sentView = false, h.fields, vs.state
		if msg == nil {
			continue
		}
		select {
		case c.send <- msg:
		default:
			h.log.Info("live updates: dropping a client that does not keep up", "view", c.view.key)
			h.drop(c)
		}
	}
}

// readShared reads the queues and nodes and derives the live fields.
func (h *liveHub) readShared(ctx context.Context) (shared, map[string]string, error) {
	qs, err := h.src.store.Queues(ctx)
	if err != nil {
		return shared{}, nil, err
	}
	nodes, err := h.src.cluster(ctx)
	if err != nil {
		return shared{}, nil, err
	}
	pools, _ := workersByQueue(nodes)
	return shared{queues: qs, nodes: nodes}, liveFields(qs, pools), nil
}

func (h *liveHub) encode(m liveMessage) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the fragments are HTML already escaped by templ
	if err := enc.Encode(m); err != nil {
		h.log.Error("live updates: encoding a message", "err", err)
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

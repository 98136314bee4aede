package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/testenv"
)

// newLiveServer serves a websocket from a hub with the given options, on the
// Env's store.
func newLiveServer(t *testing.T, e *testenv.Env, opts liveOptions) (*liveHub, string) {
	t.Helper()
	h := newLiveHub(newViews(e.Store, nil, 3*time.Second, slog.New(slog.DiscardHandler)), opts)
	ec := echo.New()
	ec.GET("/ws", h.serve)
	srv := httptest.NewServer(ec)
	t.Cleanup(srv.Close)
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
}

// wsClient is a test websocket client that keeps what it was sent.
type wsClient struct {
	conn *websocket.Conn

	mu       sync.Mutex
	messages []liveMessage
	fields   map[string]string
	order    []string
	err      error
}

func dialLive(t *testing.T, url string, dialer *websocket.Dialer) *wsClient {
	t.Helper()
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	conn, res, err := dialer.Dial(url, nil)
	require.NoError(t, err)
	res.Body.Close()
	c := &wsClient{conn: conn, fields: map[string]string{}}
	t.Cleanup(func() { conn.Close() })
	return c
}

// read keeps reading until the connection ends.
func (c *wsClient) read() {
	for {
		_, b, err := c.conn.ReadMessage()
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.mu.Unlock()
			return
		}
		var m liveMessage
		if err := json.Unmarshal(b, &m); err != nil {
			c.err = err
			c.mu.Unlock()
			return
		}
		c.messages = append(c.messages, m)
		for k, v := range m.Fields {
			c.fields[k] = v
		}
		if m.Order != nil {
			c.order = m.Order
		}
		c.mu.Unlock()
	}
}

func (c *wsClient) snapshot() (count int, firstIsSnapshot bool, field func(string) string, order []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fields := make(map[string]string, len(c.fields))
	for k, v := range c.fields {
		fields[k] = v
	}
	first := len(c.messages) > 0 && c.messages[0].Snapshot
	return len(c.messages), first, func(k string) string { return fields[k] }, append([]string(nil), c.order...)
}

// A hundred browsers watch at once: each gets its snapshot and then the
// changes of a queue taking thousands of tasks a second, coalesced to at most
// two messages a second, from one set of queries per tick.
func TestLiveHundredClients(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		h, url := newLiveServer(t, e, defaultLiveOptions())
		e.Enqueue(t, queue.NewTask{Queue: "flood", Body: "SELECT 1"}, queue.NewTask{Queue: "flood", Body: "SELECT 2"})

		const n = 100
		clients := make([]*wsClient, n)
		var dials sync.WaitGroup
		for i := range clients {
			dials.Add(1)
			go func() {
				defer dials.Done()
				view := "overview"
				if i%2 == 1 {
					view = "tasks&queue=flood"
				}
				clients[i] = dialLive(t, url+"?view="+view, nil)
				go clients[i].read()
			}()
		}
		dials.Wait()
		require.Eventually(t, func() bool {
			for _, c := range clients {
				count, first, field, _ := c.snapshot()
				if count == 0 || !first || field("count:flood:pending") != "2" {
					return false
				}
			}
			return true
		}, 20*time.Second, 20*time.Millisecond, "every client gets a snapshot first, with the counts")
		for i := 1; i < n; i += 2 {
			_, _, _, order := clients[i].snapshot()
			require.Len(t, order, 2, "a tasks client's snapshot lists the rows")
		}

		// A flood: about 4000 tasks a second for three seconds.
		start := time.Now()
		var last int64
		total := 2
		for time.Since(start) < 3*time.Second {
			batch := make([]queue.NewTask, 200)
			for i := range batch {
				batch[i] = queue.NewTask{Queue: "flood", Body: fmt.Sprintf("SELECT %d", i)}
			}
			ids := e.Enqueue(t, batch...)
			last, total = ids[len(ids)-1], total+len(ids)
			time.Sleep(50 * time.Millisecond)
		}
		flood := time.Since(start)
		want := strings.ReplaceAll(fmtCount(total), " ", "\u2009")
		require.Eventually(t, func() bool {
			for i, c := range clients {
				_, _, field, order := c.snapshot()
				if field("count:flood:pending") != want || (i%2 == 1 && (len(order) == 0 || order[0] != fmt.Sprint(last))) {
					return false
				}
			}
			return true
		}, 20*time.Second, 20*time.Millisecond, "every client catches up with the last count (%s) and the newest row", want)
		elapsed := time.Since(start)
		for i, c := range clients {
			count, _, _, _ := c.snapshot()
			// One snapshot, then at most one message per tick (500 ms).
			limit := 1 + int(elapsed/(500*time.Millisecond)) + 1
			require.LessOrEqual(t, count, limit, "client %d got %d messages in %s: updates are coalesced", i, count, elapsed.Round(time.Millisecond))
			require.GreaterOrEqual(t, count, 2, "client %d got updates during the %s flood", i, flood.Round(time.Millisecond))
		}
		t.Logf("%d clients followed %d tasks enqueued in %s; each got at most %d messages", n, total, flood.Round(time.Millisecond),
			1+int(elapsed/(500*time.Millisecond))+1)

		for _, c := range clients {
			c.conn.Close()
		}
		require.Eventually(t, func() bool { return !h.isRunning() }, 20*time.Second, 50*time.Millisecond,
			"the hub stops once its last client left")
	})
}

// fmtCount is templates.FormatCount written out for the test: thousands
// separated by a space.
func fmtCount(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// A client that never reads is dropped once its queue of messages is full;
// the others keep getting theirs on time.
func TestLiveDropsClientThatNeverReads(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		opts := defaultLiveOptions()
		opts.tick, opts.sendBuffer, opts.writeWait, opts.writeBuffer, opts.idleStop = 100*time.Millisecond, 2, time.Second, 4096, 200*time.Millisecond
		h, url := newLiveServer(t, e, opts)

		// The stuck client's socket takes in only a few kilobytes.
		small := &websocket.Dialer{HandshakeTimeout: 5 * time.Second, NetDialContext: (&net.Dialer{
			Control: func(_, _ string, rc syscall.RawConn) error {
				return rc.Control(func(fd uintptr) { setRecvBuffer(fd, 2048) })
			}}).DialContext}
		stuck := dialLive(t, url+"?view=tasks", small)
		readers := make([]*wsClient, 5)
		for i := range readers {
			readers[i] = dialLive(t, url+"?view=tasks", nil)
			go readers[i].read()
		}

		// Churn: new rows with long bodies every tick.
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				batch := make([]queue.NewTask, 20)
				for j := range batch {
					batch[j] = queue.NewTask{Queue: "churn", Body: fmt.Sprintf("SELECT '%d-%d %s'", i, j, strings.Repeat("x", 80))}
				}
				if _, err := e.Store.Enqueue(ctx, batch); err != nil {
					return
				}
				time.Sleep(30 * time.Millisecond)
			}
		}()

		// The stuck client is dropped: once it starts reading it finds the end of
		// the connection after what was buffered.
		time.Sleep(4 * time.Second)
		for _, r := range readers {
			count, first, _, _ := r.snapshot()
			require.True(t, first)
			require.GreaterOrEqual(t, count, 6, "a reading client keeps getting updates (up to 10 a second) while another is stuck")
		}
		require.NoError(t, stuck.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		var readErr error
		for readErr == nil {
			_, _, readErr = stuck.conn.ReadMessage()
		}
		var ne net.Error
		require.False(t, errors.As(readErr, &ne) && ne.Timeout(), "the stuck client's connection was ended by the server, not left open: %v", readErr)
		stop()
		<-done

		before := make([]int, len(readers))
		for i, r := range readers {
			before[i], _, _, _ = r.snapshot()
		}
		e.Enqueue(t, queue.NewTask{Queue: "churn", Body: "SELECT 'after'"})
		require.Eventually(t, func() bool {
			for i, r := range readers {
				if n, _, _, _ := r.snapshot(); n <= before[i] {
					return false
				}
			}
			return true
		}, 10*time.Second, 20*time.Millisecond, "the readers still get updates")
		for _, r := range readers {
			r.conn.Close()
		}
		require.Eventually(t, func() bool { return !h.isRunning() }, 10*time.Second, 20*time.Millisecond, "the hub stops when nobody watches")
	})
}

// A page rendered after a change gets a snapshot read after it joined, never
// the hub's reading from just before: pausing a queue and loading a page at
// once must not show the queue running again (the snapshot would undo what
// the page was rendered with).
func TestLiveSnapshotIsNotOlderThanThePage(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		_, url := newLiveServer(t, e, defaultLiveOptions())
		e.Enqueue(t, queue.NewTask{Queue: "q", Body: "SELECT 1"})
		for i := range 10 {
			first := dialLive(t, url+"?view=overview", nil)
			go first.read()
			require.Eventually(t, func() bool { n, _, _, _ := first.snapshot(); return n > 0 }, 10*time.Second, 5*time.Millisecond)
			// The hub has just read the queues for first; change them and join at once.
			paused := i%2 == 0
			_, err := e.Store.UpdateQueue(e.Ctx, "q", queue.QueueUpdate{Paused: &paused, Actor: "test"})
			require.NoError(t, err)
			second := dialLive(t, url+"?view=overview", nil)
			go second.read()
			require.Eventually(t, func() bool { n, _, _, _ := second.snapshot(); return n > 0 }, 10*time.Second, 5*time.Millisecond)
			_, isSnapshot, field, _ := second.snapshot()
			require.True(t, isSnapshot)
			require.Equal(t, fmt.Sprint(paused), field("paused:q"), "round %d: the snapshot predates the change", i)
			first.conn.Close()
			second.conn.Close()
		}
	})
}

// When the server stops, every live page is told to go away (1001) so it
// reconnects, and a page that connects meanwhile is told the same.
func TestLiveClientsAreToldToGoAwayAtShutdown(t *testing.T) {
	t.Parallel()
	testenv.ForEachDialect(t, func(t *testing.T, e *testenv.Env) {
		h, url := newLiveServer(t, e, defaultLiveOptions())
		var clients []*wsClient
		for range 5 {
			c := dialLive(t, url+"?view=overview", nil)
			go c.read()
			clients = append(clients, c)
		}
		for _, c := range clients {
			require.Eventually(t, func() bool { n, _, _, _ := c.snapshot(); return n > 0 }, 10*time.Second, 5*time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, h.shutdown(ctx), "every goodbye is written in time")
		late := dialLive(t, url+"?view=overview", nil)
		go late.read()
		for _, c := range append(clients, late) {
			require.Eventually(t, func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				return c.err != nil
			}, 5*time.Second, 5*time.Millisecond)
			c.mu.Lock()
			require.True(t, websocket.IsCloseError(c.err, websocket.CloseGoingAway), "closed with %v", c.err)
			c.mu.Unlock()
		}
		require.False(t, h.isRunning())
	})
}

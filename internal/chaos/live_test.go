package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// liveClient is one dashboard page's websocket, as a browser holds it: it
// answers pings and counts the updates it receives.
type liveClient struct {
	view      string
	conn      *websocket.Conn
	messages  atomic.Int64
	closeCode atomic.Int64 // the code the server closed with; 0 while open
	done      chan struct{}
}

// dialLive connects to the live view kind of the node at base (http://host:port).
func dialLive(t *testing.T, base, view string) *liveClient {
	t.Helper()
	conn, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws?view="+view, nil)
	require.NoError(t, err, "connecting to the %s live view", view)
	res.Body.Close()
	c := &liveClient{view: view, conn: conn, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					c.closeCode.Store(int64(ce.Code))
				} else {
					c.closeCode.Store(-1)
				}
				return
			}
			c.messages.Add(1)
		}
	}()
	return c
}

// close says goodbye, as a page that is left does, and waits for the reader.
func (c *liveClient) close() {
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
	c.conn.Close()
	<-c.done
}

// liveViews are the pages with a live view, as the clients spread over them.
var liveViews = []string{"overview", "tasks", "logs", "nodes"}

// dialMany connects n clients spread over the live views.
func dialMany(t *testing.T, base string, n int) []*liveClient {
	t.Helper()
	cs := make([]*liveClient, n)
	for i := range cs {
		cs[i] = dialLive(t, base, liveViews[i%len(liveViews)])
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.conn.Close()
		}
	})
	return cs
}

// loadGen enqueues batches through the API at a fixed pace, as a busy
// application does: every 100 ms one batch.
type loadGen struct {
	base     string
	client   *http.Client
	payload  []byte
	batch    int
	accepted atomic.Int64 // tasks the API answered 201 for
	refused  atomic.Int64 // batches that failed
	lastErr  atomic.Value
}

// newLoadGen makes batches of perBatch tasks in queue q: all "SELECT 1" but
// one, which runs slowBody.
func newLoadGen(t *testing.T, base, q string, perBatch int, slowBody string) *loadGen {
	t.Helper()
	type task struct {
		Body  string `json:"body"`
		Queue string `json:"queue"`
	}
	tasks := make([]task, perBatch)
	for i := range tasks {
		tasks[i] = task{Body: "SELECT 1", Queue: q}
	}
	tasks[0].Body = slowBody
	payload, err := json.Marshal(map[string]any{"tasks": tasks})
	require.NoError(t, err)
	return &loadGen{base: base, client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second},
		payload: payload, batch: perBatch}
}

// run enqueues a batch every 100 ms until ctx ends.
func (g *loadGen) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		res, err := g.client.Post(g.base+"/api/tasks/batch", "application/json", bytes.NewReader(g.payload))
		if err != nil {
			g.refused.Add(1)
			g.lastErr.Store(err.Error())
			continue
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			g.refused.Add(1)
			g.lastErr.Store(res.Status)
			continue
		}
		g.accepted.Add(int64(g.batch))
	}
}

// closeIdle drops the generator's kept-alive connections, so the node's count
// of goroutines no longer includes theirs.
func (g *loadGen) closeIdle() { g.client.CloseIdleConnections() }

// runtimeStats is what the node's /metrics says of its Go runtime.
type runtimeStats struct {
	goroutines int
	heapInuse  int64 // bytes
}

// scrape reads the node's runtime figures from /metrics over a connection of
// its own, closed after, so the scrape leaves nothing behind to count.
func scrape(t *testing.T, base string) runtimeStats {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	res, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var s runtimeStats
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines":
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err)
			s.goroutines = int(v)
		case "go_memstats_heap_inuse_bytes":
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err)
			s.heapInuse = int64(v)
		}
	}
	require.NoError(t, sc.Err())
	require.Positive(t, s.goroutines, "/metrics has go_goroutines")
	return s
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

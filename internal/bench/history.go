package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"readpast/internal/queue"
	"readpast/internal/web"
)

// HistoryResult is the cost of one kind of request with a history of
// finished tasks behind it: what the dashboard's user waits for, measured at
// the client over loopback HTTP, in milliseconds.
type HistoryResult struct {
	Finished int64   `json:"finished"` // finished tasks in the store (the header's totals)
	Kind     string  `json:"kind"`     // page, api, metrics, live
	Request  string  `json:"request"`
	Requests int     `json:"requests"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	// Ratios to the same request on the store as the part found it (normally
	// without history: only the live set).
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
	// Error is why a request failed (then its times are the failed one's).
	Error string `json:"error,omitempty"`
}

// historyQueuePrefix names the history part's queues: {prefix}0, 1 and 2.
const historyQueuePrefix = "bench-web-"

var historyQueues = []string{historyQueuePrefix + "0", historyQueuePrefix + "1", historyQueuePrefix + "2"}

// quietQueue is a queue of the live set that never gets history: a page of
// its finished tasks or log rows must not read the other queues' history to
// find it has none.
const quietQueue = historyQueuePrefix + "quiet"

// historyGroup and historySchedule have the third history queue's finished
// tasks and the quiet queue's pending ones: a page of their pending tasks must
// not walk their history to find them.
const (
	historyGroup    = historyQueuePrefix + "group"
	historySchedule = historyQueuePrefix + "schedule"
)

// historyGoal is SPEC §9's bound: every request at most this many times its
// cost on the store without history.
const historyGoal = 1.5

// history measures every page, the API, /metrics and each live view's tick
// against the store as it is (the baseline), then grows the history of
// finished tasks to each size of c.History and measures again. Sizes count
// the part's own history tasks; a size below what an earlier run left is
// skipped.
//
// The live set stays the same at every size: the part's queues (paused, so
// no node of another part runs them) with pending and delayed tasks, one
// task running, a few finished through the store's own finish, and a
// registered node.
func history(ctx context.Context, c Config) ([]HistoryResult, error) {
	live, err := seedLiveSet(ctx, c.Store)
	if err != nil {
		return nil, fmt.Errorf("seeding the live set: %w", err)
	}
	srv, stop, err := serveDashboard(c)
	if err != nil {
		return nil, err
	}
	defer stop()
	requests := historyRequests(srv, live)

	built, err := finishedIn(ctx, c.Store, historyQueues)
	if err != nil {
		return nil, err
	}
	built -= live.finished
	var out, base []HistoryResult
	for i := -1; i < len(c.History); i++ {
		if i >= 0 {
			want := int64(c.History[i])
			if want <= built {
				continue
			}
			fmt.Fprintf(c.Progress, "history: adding %d finished tasks\n", want-built)
			if err := buildHistory(ctx, c, historyShape{prefix: historyQueuePrefix}, int(want-built)); err != nil {
				return out, err
			}
			built = want
		}
		if err := c.Store.HeartbeatNode(ctx, live.node, live.nodeInfo); err != nil {
			return out, err
		}
		total, err := finishedIn(ctx, c.Store, nil)
		if err != nil {
			return out, err
		}
		fmt.Fprintf(c.Progress, "history: measuring %d kinds of request, %d finished tasks in the store\n", len(requests), total)
		rs := measureRequests(ctx, requests, c.HistoryRequests)
		if base == nil {
			base = rs
		}
		for j := range rs {
			rs[j].Finished = total
			rs[j].P50Ratio, rs[j].P99Ratio = rs[j].P50/base[j].P50, rs[j].P99/base[j].P99
		}
		out = append(out, rs...)
	}
	return out, nil
}

// finishedIn sums the finished counts of the named queues (nil: of all).
func finishedIn(ctx context.Context, s queue.Store, names []string) (int64, error) {
	qs, err := s.Queues(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range qs {
		if names != nil && !slices.Contains(names, q.Name) {
			continue
		}
		for st, k := range q.Counts {
			if st.Finished() {
				n += k
			}
		}
	}
	return n, nil
}

// serveDashboard runs the dashboard and API on the store, in local mode on a
// loopback port, until stop.
func serveDashboard(c Config) (base string, stop func(), err error) {
	srv, err := web.New(web.Deps{Store: c.Store, Logger: c.Logger, Version: "bench", Lease: 30 * time.Second})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = srv.CloseLive(ctx)
	}, nil
}

// historyRequest is one kind of request: a GET of url, or for a live view the
// websocket's snapshot (a joining page's first tick: the queues and nodes
// every tick reads, and the view's own queries).
type historyRequest struct {
	kind, name, url string
}

// historyRequests are every page, the API's reads, /metrics and each live
// view. The lists and filters are ones whose page is as full without history
// as with it (the live set fills them), or empty at every size (states and
// outcomes the history has none of: the read must skip the history, not
// walk it), so that only the history behind them differs.
func historyRequests(base string, l liveSet) []historyRequest {
	q := historyQueues[1]
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws?view="
	page := func(path string) historyRequest { return historyRequest{"page", path, base + path} }
	api := func(path string) historyRequest { return historyRequest{"api", path, base + path} }
	tick := func(view string) historyRequest { return historyRequest{"live", view, ws + view} }
	return append([]historyRequest{
		page("/"),
		page("/?range=24h"),
		page("/?range=7d"),
		page("/tasks"),
		page("/tasks?state=pending"),
		page("/tasks?state=succeeded"),
		page("/tasks?state=cancelled"),
		page("/tasks?queue=" + q),
		page("/tasks?queue=" + q + "&state=succeeded"),
		page("/tasks?queue=" + quietQueue + "&state=succeeded"),
		page("/tasks?group=" + historyGroup + "&state=pending"),
		page("/tasks?group=" + historyGroup + "&state=cancelled"),
		page("/tasks?schedule=" + historySchedule + "&state=pending"),
		page("/tasks?text=no-such-text"),
		page("/tasks?queue=" + q + "&state=succeeded&text=no-such-text"),
		page(fmt.Sprintf("/tasks/%d", l.pending)),
		page(fmt.Sprintf("/tasks/%d", l.done)),
		page("/logs"),
		page("/logs?outcome=succeeded"),
		page("/logs?queue=" + q),
		page("/logs?queue=" + quietQueue),
		page("/logs?queue=" + q + "&outcome=timed_out"),
		page("/logs?queue=" + quietQueue + "&outcome=succeeded"),
		page("/nodes"),
		page("/groups"),
		page("/audit"),
		api("/api/queues"),
		api("/api/groups"),
		api("/api/audit"),
		api("/api/tasks?state=succeeded"),
		api("/api/tasks?queue=" + q + "&state=pending"),
		api("/api/tasks?group=" + historyGroup + "&state=pending"),
		api("/api/tasks?text=no-such-text"),
		api("/api/tasks/count?state=succeeded"),
		api("/api/logs?outcome=succeeded"),
		api("/api/nodes"),
		{"metrics", "/metrics", base + "/metrics"},
		tick("overview"),
		tick("overview&range=7d"),
		tick("tasks"),
		tick("tasks&state=succeeded&queue=" + q),
		tick("logs"),
		tick(fmt.Sprintf("task&id=%d", l.pending)),
		tick("nodes"),
	}, jobRequests(base, l.run)...)
}

// historyWarmup rounds run before the timed ones: connections, prepared
// statements and the server's caches.
const historyWarmup = 3

// measureRequests makes rounds of one request of each kind, interleaved so
// that the machine's noise falls on every kind alike. A kind whose request
// fails (the server's deadline for a request's reads is ops.Timeout) is
// reported with its error and how long it took, and not asked again at this
// size: it is the finding, and repeating it would only take minutes.
func measureRequests(ctx context.Context, reqs []historyRequest, rounds int) []HistoryResult {
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()
	out := make([]HistoryResult, len(reqs))
	took := make([][]time.Duration, len(reqs))
	for round := 0; round < historyWarmup+rounds; round++ {
		for i, r := range reqs {
			if out[i].Error != "" {
				continue
			}
			start := time.Now()
			err := fetch(ctx, client, r)
			d := time.Since(start)
			if err != nil {
				out[i].Error = fmt.Sprintf("%v after %.1f s", err, d.Seconds())
				took[i] = append(took[i], d)
				continue
			}
			if round >= historyWarmup {
				took[i] = append(took[i], d)
			}
		}
	}
	for i, r := range reqs {
		sortDurations(took[i])
		out[i].Kind, out[i].Request, out[i].Requests = r.kind, r.name, len(took[i])
		out[i].P50, out[i].P99 = percentile(took[i], 50), percentile(took[i], 99)
	}
	return out
}

// fetch makes one request and reads the whole answer.
func fetch(ctx context.Context, client *http.Client, r historyRequest) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if r.kind == "live" {
		conn, res, err := websocket.DefaultDialer.DialContext(ctx, r.url, nil)
		if err != nil {
			return err
		}
		res.Body.Close()
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		_, msg, err := conn.ReadMessage()
		if err == nil && !strings.Contains(string(msg), `"snapshot":true`) {
			err = errors.New("the first message is not a snapshot")
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	if r.kind == "page" {
		req.Header.Set("Accept", "text/html")
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}

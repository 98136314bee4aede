//go:build unix

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/appname"
	"readpast/internal/queue"
)

// The figures of one window that do not depend on the machine's load: a
// throughput that falls because the machine is busy comes with finishes and
// claims no slower and no lock waits; one that falls because the nodes not
// hurt wait on the hurt one comes with slower finishes or claims and lock
// waits; one that falls for want of work comes with an empty queue.

// latency is what a node's /metrics says of its claims and finish writes.
type latency struct {
	claims, claimSum     float64 // readpast_claim_duration_seconds over every queue
	finishes, finishSum  float64 // readpast_finish_duration_seconds
	finished, finishedOK float64 // readpast_attempts_total: every outcome, and succeeded
}

// minus is what happened between o and l.
func (l latency) minus(o latency) latency {
	return latency{l.claims - o.claims, l.claimSum - o.claimSum, l.finishes - o.finishes, l.finishSum - o.finishSum,
		l.finished - o.finished, l.finishedOK - o.finishedOK}
}

func (l latency) String() string {
	avg := func(sum, n float64) string {
		if n == 0 {
			return "none"
		}
		return (time.Duration(sum / n * float64(time.Second))).Round(10 * time.Microsecond).String()
	}
	return fmt.Sprintf("finish write %s (%.0f), claim %s (%.0f)", avg(l.finishSum, l.finishes), l.finishes, avg(l.claimSum, l.claims), l.claims)
}

// readLatency scrapes the node's /metrics.
func readLatency(ctx context.Context, base string) (latency, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return latency{}, err
	}
	res, err := client.Do(req)
	if err != nil {
		return latency{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return latency{}, fmt.Errorf("/metrics answered %s", res.Status)
	}
	var l latency
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(line[:i], "{")
		switch name {
		case "readpast_claim_duration_seconds_count":
			l.claims += v
		case "readpast_claim_duration_seconds_sum":
			l.claimSum += v
		case "readpast_finish_duration_seconds_count":
			l.finishes += v
		case "readpast_finish_duration_seconds_sum":
			l.finishSum += v
		case "readpast_attempts_total":
			l.finished += v
			if strings.Contains(line, `outcome="succeeded"`) {
				l.finishedOK += v
			}
		}
	}
	return l, sc.Err()
}

// probeSample is one look at the server.
type probeSample struct {
	at        time.Time
	waits     map[string]int // the unhurt nodes' store sessions, by wait event (type:event), active ones only
	lockWaits int            // of which waiting on a heavyweight lock (wait_event_type Lock)
	xminAge   int64          // the oldest transaction any session of the database holds back cleanup for, in xids
	xminBy    string         // the session that holds it: its application_name and state
	deadTups  int64          // n_dead_tup of readpast_counts, readpast_throughput and readpast_queues
	held      int            // tasks the hurt node holds running (claimed, started or not)
	heldOld   int            // of which with their lease expired: waiting for a reclaim
	pending   map[string]int64
	long      map[string]int // the test's long tasks (priority 1) running, by node
	blockers  map[string]int // what the waiting sessions wait for: the blocker's application_name, state and query's start
}

// probe samples the server, and every node's /metrics, every interval.
type probe struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []probeSample
	scrapes map[string][]metricsScrape // by node; a frozen or cut node's scrapes fail and are skipped
	err     error
}

// metricsScrape is one reading of a node's /metrics.
type metricsScrape struct {
	at time.Time
	l  latency
}

// startProbe samples, on a connection of its own, what the store sessions of
// every node but the one hurt now (hurt, nil for none) wait on, the cleanup
// horizon, the dead rows of the rows every finish updates, and the tasks the
// hurt node holds; and it reads every node's /metrics.
func startProbe(t *testing.T, w *workload, nodes []*node, hurt func() *node, every time.Duration) *probe {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	p := &probe{cancel: cancel, scrapes: map[string][]metricsScrape{}}
	loop := func(f func()) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for ctx.Err() == nil {
				f()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	loop(func() {
		h := hurt()
		var names []string
		hurtName := "-"
		for _, n := range nodes {
			if n != h {
				names = append(names, appname.For(appname.Store, n.name))
			} else {
				hurtName = n.name
			}
		}
		s, err := sampleOnce(ctx, w, names, hurtName)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			p.err = err
		} else if err == nil {
			p.samples = append(p.samples, s)
		}
	})
	for _, n := range nodes {
		base := n.url(t)
		loop(func() {
			sctx, cancel := context.WithTimeout(ctx, every)
			defer cancel()
			l, err := readLatency(sctx, base)
			if err != nil {
				return
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			p.scrapes[n.name] = append(p.scrapes[n.name], metricsScrape{at: time.Now(), l: l})
		})
	}
	return p
}

// latency is what node's claims and finish writes took in [from, to), by
// its scrapes nearest inside the stretch.
func (p *probe) latency(node string, from, to time.Time) latency {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first, last *metricsScrape
	for i := range p.scrapes[node] {
		s := &p.scrapes[node][i]
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		if first == nil {
			first = s
		}
		last = s
	}
	if first == nil {
		return latency{}
	}
	return last.l.minus(first.l)
}

func sampleOnce(ctx context.Context, w *workload, names []string, hurt string) (probeSample, error) {
	s := probeSample{at: time.Now(), waits: map[string]int{}, pending: map[string]int64{}, long: map[string]int{}, blockers: map[string]int{}}
	rows, err := w.db.QueryContext(ctx, `SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, ''), count(*)
		FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND application_name = ANY($1)
		GROUP BY 1`, names)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var ev string
		var n int
		if err := rows.Scan(&ev, &n); err != nil {
			rows.Close()
			return s, err
		}
		s.waits[ev] = n
		if strings.HasPrefix(ev, "Lock:") {
			s.lockWaits += n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, err
	}
	err = w.db.QueryRowContext(ctx, `SELECT
		coalesce((SELECT age(backend_xmin) FROM pg_stat_activity WHERE datname = current_database() AND backend_xmin IS NOT NULL
			ORDER BY age(backend_xmin) DESC LIMIT 1), 0),
		coalesce((SELECT application_name || ' (' || state || ' ' || (now() - xact_start)::interval(0) || ')' FROM pg_stat_activity
			WHERE datname = current_database() AND backend_xmin IS NOT NULL ORDER BY age(backend_xmin) DESC LIMIT 1), ''),
		(SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname IN ('readpast_counts', 'readpast_throughput', 'readpast_queues')),
		(SELECT count(*) FROM readpast_tasks WHERE state = 'running' AND lease_owner LIKE $1),
		(SELECT count(*) FROM readpast_tasks WHERE state = 'running' AND lease_owner LIKE $1 AND lease_expires_at < now())`,
		hurt+"/%").Scan(&s.xminAge, &s.xminBy, &s.deadTups, &s.held, &s.heldOld)
	if err != nil {
		return s, err
	}
	if s.lockWaits > 0 {
		rows, err = w.db.QueryContext(ctx, `SELECT b.application_name || ' ' || coalesce(b.state, '') || ': ' || left(regexp_replace(b.query, '\s+', ' ', 'g'), 40), count(*)
			FROM pg_stat_activity w CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid) JOIN pg_stat_activity b ON b.pid = bp.pid
			WHERE w.datname = current_database() AND w.wait_event_type = 'Lock' AND w.application_name = ANY($1) GROUP BY 1`, names)
		if err != nil {
			return s, err
		}
		for rows.Next() {
			var by string
			var n int
			if err := rows.Scan(&by, &n); err != nil {
				rows.Close()
				return s, err
			}
			s.blockers[by] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s, err
		}
	}
	rows, err = w.db.QueryContext(ctx, `SELECT split_part(lease_owner, '/', 1), count(*) FROM readpast_tasks
		WHERE state = 'running' AND priority = 1 GROUP BY 1`)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			rows.Close()
			return s, err
		}
		s.long[node] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, err
	}
	for _, q := range w.queues() {
		c, err := queueCounts(w.Store, q)
		if err != nil {
			return s, err
		}
		s.pending[q] = c[queue.StatePending]
	}
	return s, nil
}

// probeSummary is what the samples of one stretch of time say.
type probeSummary struct {
	samples      int
	waits        map[string]int // sightings of the unhurt nodes' active store sessions, by wait event
	lockWaits    int            // sightings of one of them waiting on a lock
	maxXminAge   int64
	xminBy       string // who held the oldest xmin
	maxDead      int64
	maxHeld      int
	maxHeldOld   int
	emptyQueue   map[string]int // samples in which the queue had nothing pending
	heldLastSeen time.Time      // last sample in which the hurt node still held a task
	long         map[string]int // sum over the samples of the test's long tasks running, by node
	blockers     map[string]int // who the lock waits waited for, by application_name, state and query
}

func (s probeSummary) String() string {
	var ws []string
	for _, k := range slices.Sorted(maps.Keys(s.waits)) {
		ws = append(ws, fmt.Sprintf("%s %d", k, s.waits[k]))
	}
	var es []string
	for _, k := range slices.Sorted(maps.Keys(s.emptyQueue)) {
		es = append(es, fmt.Sprintf("%s %d", k, s.emptyQueue[k]))
	}
	perSample := 0.0
	if s.samples > 0 {
		perSample = float64(s.lockWaits) / float64(s.samples)
	}
	var bs []string
	for _, k := range slices.Sorted(maps.Keys(s.blockers)) {
		bs = append(bs, fmt.Sprintf("%s ×%d", k, s.blockers[k]))
	}
	return fmt.Sprintf("%d samples: lock waits %d (%.2f a sample, waiting for [%s]); active store sessions by wait [%s]; queue empty in [%s] samples; "+
		"oldest xmin age %d (held by %s); dead rows of the counters at most %d; hurt node held up to %d tasks, up to %d with leases expired",
		s.samples, s.lockWaits, perSample, strings.Join(bs, "; "), strings.Join(ws, ", "), strings.Join(es, ", "), s.maxXminAge, s.xminBy, s.maxDead, s.maxHeld, s.maxHeldOld)
}

// summary sums the samples taken in [from, to).
func (p *probe) summary(t *testing.T, from, to time.Time) probeSummary {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NoError(t, p.err, "sampling the server")
	out := probeSummary{waits: map[string]int{}, emptyQueue: map[string]int{}, long: map[string]int{}, blockers: map[string]int{}}
	for _, s := range p.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		out.samples++
		for k, n := range s.waits {
			out.waits[k] += n
		}
		out.lockWaits += s.lockWaits
		if s.xminAge >= out.maxXminAge {
			out.maxXminAge, out.xminBy = s.xminAge, s.xminBy
		}
		out.maxDead = max(out.maxDead, s.deadTups)
		out.maxHeld = max(out.maxHeld, s.held)
		out.maxHeldOld = max(out.maxHeldOld, s.heldOld)
		for q, n := range s.pending {
			if n == 0 {
				out.emptyQueue[q]++
			}
		}
		if s.held > 0 {
			out.heldLastSeen = s.at
		}
		for n, k := range s.long {
			out.long[n] += k
		}
		for b, k := range s.blockers {
			out.blockers[b] += k
		}
	}
	return out
}

// longHeld is how many of the test's long tasks the nodes ran on average
// over the samples: each takes a worker slot for four leases.
func (s probeSummary) longHeld(nodes ...string) float64 {
	if s.samples == 0 {
		return 0
	}
	n := 0
	for _, x := range nodes {
		n += s.long[x]
	}
	return float64(n) / float64(s.samples)
}

// stop ends the sampling.
func (p *probe) stop() {
	p.cancel()
	p.wg.Wait()
}

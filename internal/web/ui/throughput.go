package ui

import (
	"context"
	"sort"
	"sync"
	"time"

	"readpast/internal/queue"
	"readpast/web/templates"
)

// throughput counts, per minute of the last hour, the attempts that finished
// (overall and per queue) and the time tasks spent running, from the execution
// log. It reads the log incrementally: each refresh asks only for rows that
// finished since the last one (with an overlap for rows committed late, which
// are recognised by id), so a busy log costs rows once, not once per page.
// A refresh reads at most rowCap rows; minutes it could not read completely are
// drawn as not counted rather than as quiet.
type throughput struct {
	store queue.LogStore

	mu          sync.Mutex
	minutes     map[int64]*minuteCount // by Unix minute
	missing     map[int64]bool         // minutes not counted completely
	counted     map[int64]time.Time    // log row id → finished_at, for rows inside the overlap
	watermark   time.Time              // newest finished_at counted
	lastRefresh time.Time
	every       time.Duration // a refresh within this of the last one is skipped
	rowCap      int
	pageSize    int
}

type minuteCount struct {
	ok, bad int64
	busy    time.Duration
	queues  map[string]*[2]int64 // ok, bad
}

const (
	chartMinutes   = 60
	chartOverlap   = 10 * time.Second
	chartRowCap    = 50_000
	chartPageSize  = 5_000
	chartRefreshes = 5 * time.Second
)

func newThroughput(s queue.LogStore) *throughput {
	return &throughput{store: s, minutes: map[int64]*minuteCount{}, missing: map[int64]bool{},
		counted: map[int64]time.Time{}, every: chartRefreshes, rowCap: chartRowCap, pageSize: chartPageSize}
}

func unixMinute(t time.Time) int64 { return t.Unix() / 60 }

// refresh reads the log rows that finished since the last refresh.
func (t *throughput) refresh(ctx context.Context, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lastRefresh.IsZero() && now.Sub(t.lastRefresh) < t.every && !now.Before(t.lastRefresh) {
		return nil
	}
	first := unixMinute(now) - chartMinutes + 1
	windowStart := time.Unix(first*60, 0)
	since := windowStart
	if w := t.watermark.Add(-chartOverlap); w.After(since) {
		since = w
	}
	read, before := 0, int64(0)
	var oldest time.Time
	for {
		page, err := t.store.Attempts(ctx, queue.LogQuery{Since: since, Before: before, Limit: t.pageSize})
		if err != nil {
			return err
		}
		for _, r := range page {
			t.add(r, first)
			oldest = r.FinishedAt
		}
		read += len(page)
		if len(page) < t.pageSize {
			break
		}
		if read >= t.rowCap {
			// Rows between since and the oldest one read were not counted.
			for m := max(unixMinute(since), first); m <= unixMinute(oldest); m++ {
				t.missing[m] = true
			}
			break
		}
		before = page[len(page)-1].ID
	}
	t.lastRefresh = now
	t.prune(first)
	return nil
}

// add counts one log row once.
func (t *throughput) add(r queue.AttemptRecord, first int64) {
	if _, seen := t.counted[r.ID]; seen {
		return
	}
	t.counted[r.ID] = r.FinishedAt
	if r.FinishedAt.After(t.watermark) {
		t.watermark = r.FinishedAt
	}
	fm := unixMinute(r.FinishedAt)
	if fm >= first {
		m := t.minute(fm)
		pair := m.queues[r.Queue]
		if pair == nil {
			pair = &[2]int64{}
			m.queues[r.Queue] = pair
		}
		if r.Outcome == queue.OutcomeSucceeded {
			m.ok++
			pair[0]++
		} else {
			m.bad++
			pair[1]++
		}
	}
	spreadBusy(r.StartedAt, r.FinishedAt, first, func(minute int64, d time.Duration) { t.minute(minute).busy += d })
}

func (t *throughput) minute(m int64) *minuteCount {
	c := t.minutes[m]
	if c == nil {
		c = &minuteCount{queues: map[string]*[2]int64{}}
		t.minutes[m] = c
	}
	return c
}

// spreadBusy splits the running time [start, end) over the minutes it covers,
// from minute first on.
func spreadBusy(start, end time.Time, first int64, fn func(minute int64, d time.Duration)) {
	if start.IsZero() || !end.After(start) {
		return
	}
	if lo := time.Unix(first*60, 0); start.Before(lo) {
		start = lo
	}
	for start.Before(end) {
		m := unixMinute(start)
		next := time.Unix((m+1)*60, 0)
		stop := end
		if next.Before(end) {
			stop = next
		}
		fn(m, stop.Sub(start))
		start = stop
	}
}

// prune forgets minutes before the window and ids older than the overlap.
func (t *throughput) prune(first int64) {
	for m := range t.minutes {
		if m < first {
			delete(t.minutes, m)
		}
	}
	for m := range t.missing {
		if m < first {
			delete(t.missing, m)
		}
	}
	keep := t.watermark.Add(-2 * chartOverlap)
	for id, fin := range t.counted {
		if fin.Before(keep) {
			delete(t.counted, id)
		}
	}
}

// runningSince is a task running now and when its attempt started: its time so
// far counts as running although the log has no row for it yet.
type runningSince struct{ started time.Time }

// draw lays out the chart and one sparkline per queue for the hour up to now.
func (t *throughput) draw(now time.Time, running []runningSince, queues []string) (templates.Chart, map[string]templates.Sparkline) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := unixMinute(now)
	first := last - chartMinutes + 1
	live := map[int64]time.Duration{}
	for _, r := range running {
		spreadBusy(r.started, now, first, func(m int64, d time.Duration) { live[m] += d })
	}
	minutes := make([]templates.ChartMinute, 0, chartMinutes)
	perQueue := map[string][2][]int64{}
	for _, q := range queues {
		perQueue[q] = [2][]int64{make([]int64, chartMinutes), make([]int64, chartMinutes)}
	}
	gaps := 0
	for i, m := 0, first; m <= last; i, m = i+1, m+1 {
		cm := templates.ChartMinute{Label: time.Unix(m*60, 0).UTC().Format("15:04"), Missing: t.missing[m]}
		if cm.Missing {
			gaps++
		}
		span := time.Minute
		if m == last {
			span = max(now.Sub(time.Unix(m*60, 0)), time.Second)
		}
		busy := live[m]
		if c := t.minutes[m]; c != nil {
			cm.Succeeded, cm.Failed, busy = c.ok, c.bad, busy+c.busy
			for q, pair := range c.queues {
				if s, ok := perQueue[q]; ok {
					s[0][i], s[1][i] = pair[0], pair[1]
				}
			}
		}
		cm.Running = busy.Seconds() / span.Seconds()
		minutes = append(minutes, cm)
	}
	note := "times UTC"
	if gaps > 0 {
		note = "hatched minutes had more log rows than the dashboard reads at once; times UTC"
	}
	sparks := make(map[string]templates.Sparkline, len(perQueue))
	names := make([]string, 0, len(perQueue))
	for q := range perQueue {
		names = append(names, q)
	}
	sort.Strings(names)
	for _, q := range names {
		sparks[q] = templates.NewSparkline(perQueue[q][0], perQueue[q][1])
	}
	return templates.NewChart(minutes, note), sparks
}

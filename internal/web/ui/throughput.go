package ui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"readpast/internal/queue"
	"readpast/web/templates"
)

// chartRange is one range the overview's chart offers. Each reads the
// throughput rollups (Store.Throughput) of its span, a fixed number of
// buckets per queue and outcome, so a range costs the same whatever the
// length of the history and the log.
type chartRange struct {
	name       string // the overview's ?range= value
	span       queue.Span
	width      time.Duration // of one bucket
	buckets    int
	labelEvery int    // an axis label every this many buckets
	label      string // time.Format layout of an axis label
	unit       string // "finished / <unit>"
	last       string // "in the last <last>"
}

// chartRanges are offered in this order; the first is the default. Hour
// buckets draw a day as Hangfire's history graph does, one bar an hour.
var chartRanges = []chartRange{
	{name: "1h", span: queue.SpanMinute, width: time.Minute, buckets: 60, labelEvery: 10, label: "15:04", unit: "min", last: "hour"},
	{name: "24h", span: queue.SpanHour, width: time.Hour, buckets: 24, labelEvery: 3, label: "15:04", unit: "hour", last: "24 hours"},
	{name: "7d", span: queue.SpanHour, width: time.Hour, buckets: 7 * 24, labelEvery: 24, label: "Mon 2 Jan", unit: "hour", last: "7 days"},
}

// parseChartRange reads ?range=: "" is the default range.
func parseChartRange(v string) (chartRange, error) {
	if v == "" {
		return chartRanges[0], nil
	}
	for _, r := range chartRanges {
		if r.name == v {
			return r, nil
		}
	}
	return chartRange{}, &queue.ValidationError{Field: "range", Reason: fmt.Sprintf("%q is not one of 1h, 24h, 7d", v)}
}

// first is the start of the range's oldest bucket at now.
func (r chartRange) first(now time.Time) time.Time {
	return now.Truncate(r.width).Add(-time.Duration(r.buckets-1) * r.width)
}

// rangeLinks is the range switch: plain links, so it works without JS.
func rangeLinks(active chartRange) []templates.RangeLink {
	out := make([]templates.RangeLink, len(chartRanges))
	for i, r := range chartRanges {
		out[i] = templates.RangeLink{Label: r.name, URL: "/?range=" + r.name, Active: r.name == active.name}
	}
	return out
}

// throughput keeps the chart's rollup buckets, read at most once per `every`
// per range however many pages and live clients ask for them: a read of a
// range is one query of at most buckets × queues × outcomes rows.
type throughput struct {
	store queue.LogStore
	every time.Duration

	mu     sync.Mutex
	ranges map[string]*rangeSeries
}

// rangeSeries is one range's last read. Its mutex is held during the read, so
// concurrent requests wait for one query instead of each making it.
type rangeSeries struct {
	mu     sync.Mutex
	points []queue.ThroughputPoint
	readAt time.Time
}

// chartRefreshes is how often a range is read again at most.
const chartRefreshes = 5 * time.Second

func newThroughput(s queue.LogStore) *throughput {
	return &throughput{store: s, every: chartRefreshes, ranges: map[string]*rangeSeries{}}
}

// points returns the range's buckets, read again when the last read is older
// than every (or from the future: the clock went back).
func (t *throughput) points(ctx context.Context, r chartRange, now time.Time) ([]queue.ThroughputPoint, error) {
	t.mu.Lock()
	s := t.ranges[r.name]
	if s == nil {
		s = &rangeSeries{}
		t.ranges[r.name] = s
	}
	t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.readAt.IsZero() && now.Sub(s.readAt) < t.every && !now.Before(s.readAt) {
		return s.points, nil
	}
	pts, err := t.store.Throughput(ctx, queue.ThroughputQuery{Span: r.span, Since: r.first(now)})
	if err != nil {
		return s.points, err
	}
	s.points, s.readAt = pts, now
	return pts, nil
}

// runningSince is a task running now and when its attempt started: its time so
// far counts as running although the rollups have no row for it yet.
type runningSince struct{ started time.Time }

// draw lays out the chart and one sparkline per queue of queues for the range
// up to now.
func (r chartRange) draw(pts []queue.ThroughputPoint, now time.Time, running []runningSince, queues []string) (templates.Chart, map[string]templates.Sparkline) {
	buckets, perQueue := r.bucketsOf(pts, now, running)
	scale := templates.ChartScale{Unit: r.unit, Last: r.last, LabelEvery: r.labelEvery}
	sparks := make(map[string]templates.Sparkline, len(queues))
	for _, q := range queues {
		s, ok := perQueue[q]
		if !ok {
			s = [2][]int64{make([]int64, r.buckets), make([]int64, r.buckets)}
		}
		sparks[q] = templates.NewSparkline(s[0], s[1], scale)
	}
	return templates.NewChart(buckets, scale), sparks
}

// bucketsOf counts the points into the range's buckets at now, overall and
// per queue (succeeded, and every other outcome).
//
// The rollups keep, per bucket, how many attempts finished and their running
// time summed. The running area spreads a bucket's time back from the
// bucket's middle over its attempts' average duration (exact for one attempt
// finishing there, close for more), and adds the tasks running now.
func (r chartRange) bucketsOf(pts []queue.ThroughputPoint, now time.Time, running []runningSince) ([]templates.ChartBucket, map[string][2][]int64) {
	first := r.first(now)
	busy := make([]time.Duration, r.buckets)
	spread := func(start, end time.Time, tasks int64) {
		spreadBusy(start, end, first, r.width, func(i int, d time.Duration) {
			if i < r.buckets {
				busy[i] += d * time.Duration(tasks)
			}
		})
	}
	for _, s := range running {
		spread(s.started, now, 1)
	}
	buckets := make([]templates.ChartBucket, r.buckets)
	perQueue := map[string][2][]int64{}
	for _, p := range pts {
		i := int(p.At.Sub(first) / r.width)
		if p.At.Before(first) || i >= r.buckets || p.N <= 0 {
			continue
		}
		q, found := perQueue[p.Queue]
		if !found {
			q = [2][]int64{make([]int64, r.buckets), make([]int64, r.buckets)}
			perQueue[p.Queue] = q
		}
		if p.Outcome == queue.OutcomeSucceeded {
			buckets[i].Succeeded += p.N
			q[0][i] += p.N
		} else {
			buckets[i].Failed += p.N
			q[1][i] += p.N
		}
		mid := p.At.Add(r.width / 2)
		if mid.After(now) {
			mid = now
		}
		spread(mid.Add(-p.Busy/time.Duration(p.N)), mid, p.N)
	}
	for i := range buckets {
		start := first.Add(time.Duration(i) * r.width)
		buckets[i].Label = start.UTC().Format(r.label)
		span := r.width
		if i == r.buckets-1 {
			span = max(now.Sub(start), time.Second)
		}
		buckets[i].Running = busy[i].Seconds() / span.Seconds()
	}
	return buckets, perQueue
}

// spreadBusy splits the running time [start, end) over the buckets of width
// it covers, from first on, giving fn each bucket's index and share.
func spreadBusy(start, end, first time.Time, width time.Duration, fn func(i int, d time.Duration)) {
	if start.IsZero() || !end.After(start) {
		return
	}
	if start.Before(first) {
		start = first
	}
	for start.Before(end) {
		i := int(start.Sub(first) / width)
		stop := first.Add(time.Duration(i+1) * width)
		if end.Before(stop) {
			stop = end
		}
		fn(i, stop.Sub(start))
		start = stop
	}
}

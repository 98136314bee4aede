package templates

import (
	"fmt"
	"strconv"
	"strings"
)

// ChartBucket is one bucket of throughput (a minute or an hour): attempts that
// finished in it and the average number of tasks running during it.
type ChartBucket struct {
	Label     string // e.g. 14:05
	Succeeded int64
	Failed    int64 // every other outcome: failed, timed_out, cancelled, lost
	Running   float64
}

// ChartScale says what one bucket and the whole chart span, for the labels.
type ChartScale struct {
	Unit       string // a bucket: "min" or "hour"
	Last       string // the range: "hour", "24 hours", "7 days"
	LabelEvery int    // an axis label every this many buckets
}

// RangeLink is one choice of the chart's range switch.
type RangeLink struct {
	Label, URL string
	Active     bool
}

// Chart is an SVG throughput chart ready to draw: finished attempts per bucket
// as stacked bars above, average running tasks as an area below.
type Chart struct {
	Width, Height int
	Bars          []ChartRect
	RunningPath   string // SVG path of the running area
	Labels        []ChartLabel
	Rules         []ChartRect // horizontal hairlines
	Title         string      // accessible summary
	Note          string
}

// ChartRect is one rectangle of the chart.
type ChartRect struct {
	X, Y, W, H string
	Class      string
	Title      string
}

// ChartLabel is one text label of the chart.
type ChartLabel struct {
	X, Y   string
	Text   string
	Anchor string // start, middle, end
}

// Sparkline is a queue's finished-per-bucket trend in a table cell.
type Sparkline struct {
	Width, Height int
	Bars          []ChartRect
	Title         string
}

const (
	chartW      = 960
	chartAxisW  = 44 // left margin for the scale labels
	barsTop     = 6
	barsH       = 92
	runTop      = barsTop + barsH + 14
	runH        = 34
	chartXLabel = runTop + runH + 13
	chartH      = chartXLabel + 3
)

// NewChart lays out the chart for buckets, oldest first.
func NewChart(buckets []ChartBucket, s ChartScale) Chart {
	c := Chart{Width: chartW, Height: chartH, Note: "times UTC"}
	n := len(buckets)
	if n == 0 {
		return c
	}
	var maxDone int64
	var maxRun float64
	var total int64
	for _, m := range buckets {
		maxDone = max(maxDone, m.Succeeded+m.Failed)
		maxRun = max(maxRun, m.Running)
		total += m.Succeeded + m.Failed
	}
	doneScale := niceCeil(float64(maxDone))
	runScale := niceCeil(maxRun)
	plotW := float64(chartW - chartAxisW - 4)
	slot := plotW / float64(n)
	barW := max(slot-1.5, 1)
	x := func(i int) float64 { return chartAxisW + float64(i)*slot }

	for i, m := range buckets {
		okH := float64(m.Succeeded) / doneScale * barsH
		badH := float64(m.Failed) / doneScale * barsH
		title := fmt.Sprintf("%s: %d succeeded, %d failed, %s running on average", m.Label, m.Succeeded, m.Failed, fmt1(m.Running))
		if m.Succeeded > 0 {
			c.Bars = append(c.Bars, ChartRect{X: f(x(i)), Y: f(barsTop + barsH - okH), W: f(barW), H: f(okH), Class: "ok", Title: title})
		}
		if m.Failed > 0 {
			c.Bars = append(c.Bars, ChartRect{X: f(x(i)), Y: f(barsTop + barsH - okH - badH), W: f(barW), H: f(badH), Class: "bad", Title: title})
		}
	}
	// The running area: a step line over the buckets, closed along the baseline.
	var p strings.Builder
	base := float64(runTop + runH)
	fmt.Fprintf(&p, "M%s %s", f(x(0)), f(base))
	for i, m := range buckets {
		y := base - m.Running/runScale*runH
		fmt.Fprintf(&p, "L%s %sL%s %s", f(x(i)), f(y), f(x(i)+slot), f(y))
	}
	fmt.Fprintf(&p, "L%s %sZ", f(x(n)), f(base))
	c.RunningPath = p.String()

	c.Rules = []ChartRect{
		{X: f(chartAxisW), Y: f(barsTop), W: f(plotW), H: "0.5", Class: "rule"},
		{X: f(chartAxisW), Y: f(barsTop + barsH), W: f(plotW), H: "0.5", Class: "axis"},
		{X: f(chartAxisW), Y: f(runTop), W: f(plotW), H: "0.5", Class: "rule"},
		{X: f(chartAxisW), Y: f(runTop + runH), W: f(plotW), H: "0.5", Class: "axis"},
	}
	c.Labels = []ChartLabel{
		{X: f(chartAxisW - 6), Y: f(barsTop + 4), Text: formatCount(int64(doneScale)), Anchor: "end"},
		{X: f(chartAxisW - 6), Y: f(barsTop + barsH), Text: "0", Anchor: "end"},
		{X: f(chartAxisW - 6), Y: f(runTop + 4), Text: fmt1(runScale), Anchor: "end"},
		{X: f(chartAxisW - 6), Y: f(runTop + runH), Text: "0", Anchor: "end"},
		{X: f(chartAxisW + 4), Y: f(barsTop + 10), Text: "finished / " + s.Unit, Anchor: "start"},
		{X: f(chartAxisW + 4), Y: f(runTop + 10), Text: "running (avg)", Anchor: "start"},
	}
	for i := 0; i < n; i += max(s.LabelEvery, 1) {
		c.Labels = append(c.Labels, ChartLabel{X: f(x(i)), Y: f(chartXLabel), Text: buckets[i].Label, Anchor: "start"})
	}
	c.Labels = append(c.Labels, ChartLabel{X: f(x(n)), Y: f(chartXLabel), Text: "now", Anchor: "end"})
	c.Title = fmt.Sprintf("%s attempts finished in the last %s", formatCount(total), s.Last)
	return c
}

// NewSparkline draws one queue's finished-per-bucket bars, oldest first: each
// bucket's succeeded in green with its failed stacked on top in red, each in
// proportion, so one failure among a hundred finishes is a sliver of red and
// not a whole red minute. A failure is at least a pixel high, so it shows.
func NewSparkline(succeeded []int64, failed []int64, sc ChartScale) Sparkline {
	const w, h = 120, 18
	s := Sparkline{Width: w, Height: h}
	var top, total, bad int64
	for i, v := range succeeded {
		top = max(top, v+failed[i])
		total += v + failed[i]
		bad += failed[i]
	}
	s.Title = fmt.Sprintf("%s finished in the last %s", formatCount(total), sc.Last)
	if bad > 0 {
		s.Title += fmt.Sprintf(", %s failed", formatCount(bad))
	}
	if top == 0 || len(succeeded) == 0 {
		return s
	}
	slot := float64(w) / float64(len(succeeded))
	for i, v := range succeeded {
		if v+failed[i] == 0 {
			continue
		}
		all := max(float64(v+failed[i])/float64(top)*h, 1)
		badH := 0.0
		if failed[i] > 0 {
			badH = max(all*float64(failed[i])/float64(v+failed[i]), 1)
		}
		x, bw := f(float64(i)*slot), f(max(slot-0.5, 0.5))
		if okH := all - badH; okH > 0 {
			s.Bars = append(s.Bars, ChartRect{X: x, Y: f(h - okH), W: bw, H: f(okH), Class: "ok"})
		}
		if badH > 0 {
			s.Bars = append(s.Bars, ChartRect{X: x, Y: f(h - all), W: bw, H: f(badH), Class: "bad"})
		}
	}
	return s
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten, so scale labels read well.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func f(v float64) string    { return strconv.FormatFloat(v, 'f', 1, 64) }
func fmt1(v float64) string { return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") }

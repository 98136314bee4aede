package templates

import (
	"fmt"
	"strconv"
	"strings"
)

// ChartMinute is one minute of throughput: attempts that finished in it and the
// average number of tasks running during it.
type ChartMinute struct {
	Label     string // e.g. 14:05
	Succeeded int64
	Failed    int64 // every other outcome: failed, timed_out, cancelled, lost
	Running   float64
	Missing   bool // not counted: more rows than the dashboard reads at once
}

// Chart is an SVG throughput chart ready to draw: finished attempts per minute
// as stacked bars above, average running tasks as an area below.
type Chart struct {
	Width, Height int
	Bars          []ChartRect
	Gaps          []ChartRect // minutes that were not counted
	RunningPath   string      // SVG path of the running area
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

// Sparkline is a queue's finished-per-minute trend in a table cell.
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

// NewChart lays out the chart for minutes, oldest first.
func NewChart(minutes []ChartMinute, note string) Chart {
	c := Chart{Width: chartW, Height: chartH, Note: note}
	n := len(minutes)
	if n == 0 {
		return c
	}
	var maxDone int64
	var maxRun float64
	var total int64
	for _, m := range minutes {
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

	for i, m := range minutes {
		if m.Missing {
			c.Gaps = append(c.Gaps, ChartRect{X: f(x(i)), Y: f(barsTop), W: f(slot), H: f(barsH), Class: "gap",
				Title: m.Label + ": not counted"})
			continue
		}
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
	// The running area: a step line over the minutes, closed along the baseline.
	var p strings.Builder
	base := float64(runTop + runH)
	fmt.Fprintf(&p, "M%s %s", f(x(0)), f(base))
	for i, m := range minutes {
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
		{X: f(chartAxisW + 4), Y: f(barsTop + 10), Text: "finished / min", Anchor: "start"},
		{X: f(chartAxisW + 4), Y: f(runTop + 10), Text: "running (avg)", Anchor: "start"},
	}
	for i := 0; i < n; i += 10 {
		c.Labels = append(c.Labels, ChartLabel{X: f(x(i)), Y: f(chartXLabel), Text: minutes[i].Label, Anchor: "start"})
	}
	c.Labels = append(c.Labels, ChartLabel{X: f(x(n)), Y: f(chartXLabel), Text: "now", Anchor: "end"})
	c.Title = fmt.Sprintf("%s attempts finished in the last %d minutes", formatCount(total), n)
	return c
}

// NewSparkline draws finished-per-minute bars for one queue.
func NewSparkline(perMinute []int64, failed []int64) Sparkline {
	const w, h = 120, 18
	s := Sparkline{Width: w, Height: h}
	var top, total int64
	for i, v := range perMinute {
		top = max(top, v+failed[i])
		total += v + failed[i]
	}
	s.Title = fmt.Sprintf("%s finished in the last %d minutes", formatCount(total), len(perMinute))
	if top == 0 || len(perMinute) == 0 {
		return s
	}
	slot := float64(w) / float64(len(perMinute))
	for i, v := range perMinute {
		all := float64(v+failed[i]) / float64(top) * h
		if all == 0 {
			continue
		}
		all = max(all, 1)
		class := "ok"
		if failed[i] > 0 {
			class = "bad"
		}
		s.Bars = append(s.Bars, ChartRect{X: f(float64(i) * slot), Y: f(h - all), W: f(max(slot-0.5, 0.5)), H: f(all), Class: class})
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

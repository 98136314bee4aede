package templates

import (
	"fmt"
	"strconv"
)

// The layout of a job's flow (FlowOf): step boxes one under the other, the
// success arrows on the right, the failure arrows on the left, so the two
// never cross each other and a go-to reads as a loop around the boxes.

// FlowStep is a step as the flow drawing needs it: its name and its actions
// as plan indexes (-1 quit with success, -2 quit with failure).
type FlowStep struct {
	Name                 string
	OnSuccess, OnFailure int
	Unreachable          bool
}

const (
	flowBoxW   = 240
	flowBoxH   = 34
	flowGap    = 30
	flowMargin = 170 // room for the arrows and the quits on each side
)

// FlowOf lays the steps out.
func FlowOf(steps []FlowStep) Flow {
	f := Flow{Width: flowBoxW + 2*flowMargin, Height: len(steps)*(flowBoxH+flowGap) + flowGap}
	x := flowMargin
	y := func(i int) int { return flowGap/2 + i*(flowBoxH+flowGap) }
	for i, s := range steps {
		f.Boxes = append(f.Boxes, FlowBox{X: x, Y: y(i), W: flowBoxW, H: flowBoxH, Name: s.Name,
			Label: fmt.Sprintf("%d. %s", i+1, clip(s.Name, 28)), Unreachable: s.Unreachable})
	}
	for i, s := range steps {
		mid := y(i) + flowBoxH/2
		for _, a := range []struct {
			to   int
			kind string
		}{{s.OnSuccess, "ok"}, {s.OnFailure, "fail"}} {
			right := a.kind == "ok"
			switch {
			case a.to < 0:
				f.Ends = append(f.Ends, flowEnd(a.to, a.kind, x, mid, right, s.Name))
			case right && a.to == i+1:
				// The next step: straight down.
				f.Arrows = append(f.Arrows, FlowArrow{Kind: a.kind, Title: s.Name + " succeeded: next step",
					D: fmt.Sprintf("M %d %d L %d %d", x+flowBoxW/2, y(i)+flowBoxH, x+flowBoxW/2, y(a.to)-2)})
			default:
				f.Arrows = append(f.Arrows, loop(i, a.to, a.kind, x, y, right, s.Name, steps[a.to].Name))
			}
		}
	}
	return f
}

// loop is a go-to arrow from box i to box j around the right (success) or
// left (failure) side, wider the further it goes so loops nest.
func loop(i, j int, kind string, x int, y func(int) int, right bool, from, to string) FlowArrow {
	reach := 24 + 14*abs(j-i)
	if reach > flowMargin-60 {
		reach = flowMargin - 60
	}
	x0, dx := x+flowBoxW, reach
	if !right {
		x0, dx = x, -reach
	}
	y0 := y(i) + flowBoxH/2 - 6
	y1 := y(j) + flowBoxH/2 + 6
	if !right {
		y0, y1 = y0+12, y1-12
	}
	verb := "succeeded"
	if kind == "fail" {
		verb = "failed"
	}
	end := x0 + 4
	if !right {
		end = x0 - 4
	}
	return FlowArrow{Kind: kind, Title: fmt.Sprintf("%s %s: go to %s", from, verb, to),
		D: fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x0, y0, x0+dx, y0, x0+dx, y1, end, y1)}
}

func flowEnd(to int, kind string, x, mid int, right bool, from string) FlowEnd {
	text, title := "quit: success", from+": quit reporting success"
	if to == -2 {
		text, title = "quit: failure", from+": quit reporting failure"
	}
	cls := "end-ok"
	if to == -2 {
		cls = "end-fail"
	}
	_ = kind
	if right {
		return FlowEnd{X: x + flowBoxW + 8, Y: mid - 4, Anchor: "start", Kind: cls, Text: "✓ " + text, Title: title}
	}
	return FlowEnd{X: x - 8, Y: mid + 12, Anchor: "end", Kind: cls, Text: text + " ✗", Title: title}
}

// DurationChartOf draws durations (milliseconds, oldest first) with their
// states and links.
func DurationChartOf(ms []int64, states, titles, urls []string) DurationChart {
	c := DurationChart{Width: 640, Height: 120, Runs: len(ms)}
	var max int64 = 1
	for _, v := range ms {
		if v > max {
			max = v
		}
	}
	c.Max = ShortDuration(max)
	if len(ms) == 0 {
		return c
	}
	w := c.Width / len(ms)
	if w > 40 {
		w = 40
	}
	for i, v := range ms {
		h := int(v * int64(c.Height-10) / max)
		if h < 2 {
			h = 2
		}
		c.Bars = append(c.Bars, DurationBar{X: i * w, Y: c.Height - h, W: w - 2, H: h, State: states[i], Title: titles[i], URL: urls[i]})
	}
	return c
}

// ShortDuration writes milliseconds as 850ms, 12.3s, 4m05s or 1h10m.
func ShortDuration(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + "ms"
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms/1000%60)
	}
	return fmt.Sprintf("%dh%02dm", ms/3_600_000, ms/60_000%60)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// itoa is an int attribute value.
func itoa(v int) string { return strconv.Itoa(v) }

package templates

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// One failure among a minute's hundred finishes is a sliver of red on top of
// the green, not a whole red bar: a sparkline shows the share that failed.
func TestSparklineShowsTheShareThatFailed(t *testing.T) {
	s := NewSparkline([]int64{99, 50}, []int64{1, 0}, ChartScale{Last: "hour"})
	var ok, bad float64
	for _, b := range s.Bars {
		h, err := strconv.ParseFloat(b.H, 64)
		require.NoError(t, err)
		if b.X != "0.0" {
			continue
		}
		switch b.Class {
		case "ok":
			ok += h
		case "bad":
			bad += h
		}
	}
	require.Greater(t, ok, 0.0, "the minute's 99 successes are drawn green: %+v", s.Bars)
	require.Greater(t, bad, 0.0, "its one failure still shows: %+v", s.Bars)
	require.Less(t, bad, ok/10, "the failure's red is its share of the bar, not the whole bar: %+v", s.Bars)
	require.Contains(t, s.Title, "1 failed", "the title says how many failed: %q", s.Title)
}

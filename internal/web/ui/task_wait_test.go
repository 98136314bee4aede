package ui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A wait of minutes or hours reads as "in 3h10m"; past a couple of days a
// DBA wants the date, not "in 1130d14h".
func TestBriefWaitShowsDateFarAhead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, attempts int) string {
		text, until := briefWait(&queue.Task{State: queue.StatePending, AvailableAt: now.Add(d), Attempts: attempts}, now)
		if !until.IsZero() {
			text += " " + until.Short
		}
		return text
	}
	require.Equal(t, "in 3h10m", at(3*time.Hour+10*time.Minute, 0))
	require.Equal(t, "retry in 12.0s", at(12*time.Second, 1))
	far := time.Date(2030, 1, 1, 2, 30, 0, 0, time.UTC)
	require.Equal(t, "until 2030-01-01 02:30", at(far.Sub(now), 0))
	require.Equal(t, "retry at 2026-12-01 10:00", at(4*24*time.Hour, 2))
}

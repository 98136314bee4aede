package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// TestPlan: one run stands for every due fire time, and the misfire policy
// decides whether a late one runs; with a fixed clock.
func TestPlan(t *testing.T) {
	t.Parallel()
	hourly := func(next time.Time, m queue.Misfire) queue.DueSchedule {
		return queue.DueSchedule{ID: 1, Name: "h", Cron: "0 * * * *", TimeZone: "UTC", Misfire: m, Version: 4, NextFireAt: next}
	}
	due := at(t, "UTC", "2025-06-01 10:00:00")
	cases := []struct {
		name    string
		d       queue.DueSchedule
		now     time.Time
		fireAt  time.Time
		missed  int
		skipped bool
	}{
		{"on_time", hourly(due, queue.MisfireRunOnce), due.Add(300 * time.Millisecond), due, 0, false},
		{"late_within_grace_under_skip", hourly(due, queue.MisfireSkip), due.Add(50 * time.Second), due, 0, false},
		{"late_past_grace_under_skip", hourly(due, queue.MisfireSkip), due.Add(2 * time.Minute), due, 1, true},
		{"downtime_run_once", hourly(due, queue.MisfireRunOnce), due.Add(5*time.Hour + 30*time.Minute), due.Add(5 * time.Hour), 5, false},
		{"downtime_skip", hourly(due, queue.MisfireSkip), due.Add(5*time.Hour + 30*time.Minute), due.Add(5 * time.Hour), 6, true},
		{"downtime_skip_back_on_time", hourly(due, queue.MisfireSkip), due.Add(5*time.Hour + 5*time.Second), due.Add(5 * time.Hour), 5, false},
		{"downtime_across_dst", queue.DueSchedule{ID: 2, Name: "d", Cron: "30 2 * * *", TimeZone: "Europe/Paris", Version: 1,
			NextFireAt: at(t, "Europe/Paris", "2025-03-29 02:30:00")},
			at(t, "Europe/Paris", "2025-03-31 10:00:00"), at(t, "Europe/Paris", "2025-03-31 02:30:00"), 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := Plan(c.d, c.now, DefaultMisfireGrace)
			require.NoError(t, err)
			require.True(t, c.fireAt.Equal(f.FireAt), "fire time %s, want %s", f.FireAt, c.fireAt)
			require.Equal(t, c.missed, f.Missed)
			require.Equal(t, c.skipped, f.SkipMissed)
			require.Equal(t, c.d.Version, f.Version, "the fire is made only at the version planned")
			spec, err := Parse(c.d.Cron, c.d.TimeZone)
			require.NoError(t, err)
			require.True(t, spec.Next(c.now).Equal(f.Next), "the next fire time is the first after now")
		})
	}

	_, err := Plan(hourly(due, queue.MisfireRunOnce), due.Add(-time.Second), DefaultMisfireGrace)
	require.Error(t, err, "a schedule not due yet has no fire to plan")
}

// TestPlanAfterALongDowntimeOfAFastSchedule: a year of every-second fire
// times is not walked one by one; the run is of the latest, and the count says
// at least maxCounted.
func TestPlanAfterALongDowntimeOfAFastSchedule(t *testing.T) {
	t.Parallel()
	next := at(t, "UTC", "2024-06-01 00:00:00")
	now := at(t, "UTC", "2025-06-01 12:34:56").Add(700 * time.Millisecond)
	f, err := Plan(queue.DueSchedule{Name: "s", Cron: "* * * * * *", NextFireAt: next}, now, DefaultMisfireGrace)
	require.NoError(t, err)
	require.True(t, now.Truncate(time.Second).Equal(f.FireAt), "the latest fire time %s", f.FireAt)
	require.Equal(t, maxCounted-1, f.Missed)
	require.True(t, now.Truncate(time.Second).Add(time.Second).Equal(f.Next))

	f, err = Plan(queue.DueSchedule{Name: "s", Cron: "*/10 * 3 * * *", NextFireAt: next}, now, DefaultMisfireGrace)
	require.NoError(t, err)
	require.Equal(t, "2025-06-01 03:59:50", f.FireAt.UTC().Format(time.DateTime), "the latest in the last 03:00 hour")
}

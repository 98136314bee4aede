package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// at reads "2006-01-02 15:04:05" in zone.
func at(t *testing.T, zone, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	v, err := time.ParseInLocation(time.DateTime, s, loc)
	require.NoError(t, err)
	return v
}

// fires lists the fire times of expr in zone from `from` (a local time) up to
// `until`, as "01-02 15:04:05 MST" in the zone: the table tests compare these.
func fires(t *testing.T, expr, zone, from, until string) []string {
	t.Helper()
	s, err := Parse(expr, zone)
	require.NoError(t, err)
	var out []string
	end := at(t, zone, until)
	for f := s.Next(at(t, zone, from)); !f.IsZero() && f.Before(end); f = s.Next(f) {
		out = append(out, f.In(s.Location()).Format("01-02 15:04:05 MST"))
		require.Less(t, len(out), 500, "runaway")
	}
	return out
}

// TestDaylightSavingTime: fixed-time jobs fire once on the day the clocks jump
// over their time (when the gap ends) and once on the day the clocks go back
// (the first time); jobs with '*' in the hour or minute follow the real clock.
// robfig/cron alone skips the first and runs the second twice.
func TestDaylightSavingTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, expr, zone, from, until string
		want                          []string
	}{
		// Paris: 2025-03-30 02:00 CET -> 03:00 CEST; 2025-10-26 03:00 CEST -> 02:00 CET.
		{"paris_spring_daily_0230_fires_at_0300", "30 2 * * *", "Europe/Paris", "2025-03-29 00:00:00", "2025-04-01 00:00:00",
			[]string{"03-29 02:30:00 CET", "03-30 03:00:00 CEST", "03-31 02:30:00 CEST"}},
		{"paris_autumn_daily_0230_fires_once", "30 2 * * *", "Europe/Paris", "2025-10-25 00:00:00", "2025-10-28 00:00:00",
			[]string{"10-25 02:30:00 CEST", "10-26 02:30:00 CEST", "10-27 02:30:00 CET"}},
		{"paris_spring_seconds_field", "15 30 2 * * *", "Europe/Paris", "2025-03-30 00:00:00", "2025-03-31 00:00:00",
			[]string{"03-30 03:00:00 CEST"}},
		{"paris_spring_daily_0300_is_not_doubled", "0 3 * * *", "Europe/Paris", "2025-03-30 00:00:00", "2025-03-31 00:00:00",
			[]string{"03-30 03:00:00 CEST"}},
		{"paris_spring_hourly_follows_the_clock", "0 * * * *", "Europe/Paris", "2025-03-30 00:30:00", "2025-03-30 04:30:00",
			[]string{"03-30 01:00:00 CET", "03-30 03:00:00 CEST", "03-30 04:00:00 CEST"}},
		{"paris_autumn_hourly_runs_the_repeated_hour", "@hourly", "Europe/Paris", "2025-10-26 00:30:00", "2025-10-26 03:30:00",
			[]string{"10-26 01:00:00 CEST", "10-26 02:00:00 CEST", "10-26 02:00:00 CET", "10-26 03:00:00 CET"}},
		{"paris_daily_descriptor_unaffected", "@daily", "Europe/Paris", "2025-10-25 12:00:00", "2025-10-28 00:00:00",
			[]string{"10-26 00:00:00 CEST", "10-27 00:00:00 CET"}},
		// New York: 2025-03-09 02:00 EST -> 03:00 EDT; 2025-11-02 02:00 EDT -> 01:00 EST.
		{"new_york_spring_daily_0230", "30 2 * * *", "America/New_York", "2025-03-08 12:00:00", "2025-03-11 00:00:00",
			[]string{"03-09 03:00:00 EDT", "03-10 02:30:00 EDT"}},
		{"new_york_autumn_daily_0130_fires_once", "30 1 * * *", "America/New_York", "2025-11-01 12:00:00", "2025-11-04 00:00:00",
			[]string{"11-02 01:30:00 EDT", "11-03 01:30:00 EST"}},
		{"new_york_autumn_every_20_minutes_runs_both_hours", "*/20 * * * *", "America/New_York", "2025-11-02 00:50:00", "2025-11-02 02:30:00",
			[]string{"11-02 01:00:00 EDT", "11-02 01:20:00 EDT", "11-02 01:40:00 EDT",
				"11-02 01:00:00 EST", "11-02 01:20:00 EST", "11-02 01:40:00 EST", "11-02 02:00:00 EST", "11-02 02:20:00 EST"}},
		{"new_york_spring_every_30_minutes_skips_the_gap", "*/30 * * * *", "America/New_York", "2025-03-09 01:00:00", "2025-03-09 04:00:00",
			[]string{"03-09 01:30:00 EST", "03-09 03:00:00 EDT", "03-09 03:30:00 EDT"}},
		// Lord Howe: a 30-minute shift. 2025-10-05 02:00 -> 02:30 (+1030 -> +11); 2025-04-06 02:00 -> 01:30.
		{"lord_howe_spring_daily_0215_fires_at_0230", "15 2 * * *", "Australia/Lord_Howe", "2025-10-04 12:00:00", "2025-10-07 00:00:00",
			[]string{"10-05 02:30:00 +11", "10-06 02:15:00 +11"}},
		{"lord_howe_autumn_daily_0145_fires_once", "45 1 * * *", "Australia/Lord_Howe", "2025-04-05 12:00:00", "2025-04-08 00:00:00",
			[]string{"04-06 01:45:00 +11", "04-07 01:45:00 +1030"}},
		{"lord_howe_autumn_every_15_minutes_runs_the_repeated_half_hour", "*/15 * * * *", "Australia/Lord_Howe", "2025-04-06 01:20:00", "2025-04-06 02:20:00",
			[]string{"04-06 01:30:00 +11", "04-06 01:45:00 +11", "04-06 01:30:00 +1030", "04-06 01:45:00 +1030", "04-06 02:00:00 +1030", "04-06 02:15:00 +1030"}},
		// A zone without DST.
		{"utc_seconds", "*/20 * * * * *", "", "2025-01-01 00:00:00", "2025-01-01 00:01:00",
			[]string{"01-01 00:00:20 UTC", "01-01 00:00:40 UTC"}},
		{"day_of_month_or_weekday", "0 0 1,15 * MON", "UTC", "2025-01-01 00:00:00", "2025-01-21 00:00:00",
			[]string{"01-06 00:00:00 UTC", "01-13 00:00:00 UTC", "01-15 00:00:00 UTC", "01-20 00:00:00 UTC"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, fires(t, c.expr, c.zone, c.from, c.until))
		})
	}
}

// TestNextIsTheSameFromAnyStart: the fire times are one set, whichever instant
// the search starts from (schedulers start from wherever they are).
func TestNextIsTheSameFromAnyStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, zone, from string }{
		{"30 2 * * *", "Europe/Paris", "2025-10-25 12:00:00"},
		{"*/20 * * * *", "America/New_York", "2025-11-02 00:30:00"},
		{"15 2 * * *", "Australia/Lord_Howe", "2025-10-04 23:00:00"},
	} {
		s, err := Parse(c.expr, c.zone)
		require.NoError(t, err)
		start := at(t, c.zone, c.from)
		all := s.NextN(start, 20)
		for i := 1; i < len(all); i++ {
			for _, probe := range []time.Time{all[i-1], all[i-1].Add(time.Second), all[i].Add(-time.Second)} {
				require.True(t, all[i].Equal(s.Next(probe)), "%s in %s: Next(%s) = %s, want %s", c.expr, c.zone, probe, s.Next(probe), all[i])
			}
		}
	}
}

func TestParseRefusesWhatCannotBeAScheduleNamingTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, zone, field, says string }{
		{"", "", "cron", "empty"},
		{"* * * *", "", "cron", "cannot be read"},
		{"61 * * * *", "", "cron", "cannot be read"},
		{"0 0 L * *", "", "cron", "cannot be read"},
		{"@every 5m", "", "cron", "interval"},
		{"1,2,3,,4 * * * *", "", "cron", `empty item in the list "1,2,3,,4"`},
		{"0 ,6 * * *", "", "cron", "empty item"},
		{"0 0 * * 1,", "", "cron", "empty item"},
		{"@reboot", "", "cron", "cannot be read"},
		{"CRON_TZ=Asia/Tokyo 0 0 * * *", "", "cron", "time_zone"},
		{strings.Repeat("1,", 200) + "1 * * * *", "", "cron", "over the limit"},
		{"0 0 * * *", "Europe/Pariss", "time_zone", "not a known IANA time zone"},
		{"0 0 * * *", "Local", "time_zone", "each node"},
		{"0 0 * * *", "../../etc/passwd", "time_zone", "not a known"},
	} {
		_, err := Parse(c.expr, c.zone)
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve, "%q in %q", c.expr, c.zone)
		require.Equal(t, c.field, ve.Field, "%q in %q: %v", c.expr, c.zone, err)
		require.Contains(t, ve.Reason, c.says)
	}
}

func TestDescriptorsAndImpossibleDates(t *testing.T) {
	t.Parallel()
	from := at(t, "UTC", "2025-01-01 00:00:00")
	for expr, want := range map[string]string{
		"@yearly":      "2026-01-01 00:00:00",
		"@monthly":     "2025-02-01 00:00:00",
		"@weekly":      "2025-01-05 00:00:00",
		"@daily":       "2025-01-02 00:00:00",
		"@midnight":    "2025-01-02 00:00:00",
		"@hourly":      "2025-01-01 01:00:00",
		"0 0 29 2 *":   "2028-02-29 00:00:00",
		"0 0 31 * *":   "2025-01-31 00:00:00",
		"0 0 30 2 *":   "never",
		"0 0 31 4 *":   "never",
		"0 0 31 4,6 *": "never",
	} {
		s, err := Parse(expr, "")
		require.NoError(t, err, expr)
		got := "never"
		if next := s.Next(from); !next.IsZero() {
			got = next.UTC().Format(time.DateTime)
		}
		require.Equal(t, want, got, expr)
	}
}

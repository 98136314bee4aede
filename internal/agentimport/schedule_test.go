package agentimport

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/schedule"
)

// today is the server's date the conversion is judged on: Friday 2026-11-27.
const today = 20261127

// at returns a schedule enabled from a past date with no end, at 01:00 once a
// day unless changed: the defaults sp_add_schedule writes.
func at(freqType, freqInterval int, change ...func(*Schedule)) Schedule {
	s := Schedule{Name: "s", Enabled: true, FreqType: freqType, FreqInterval: freqInterval,
		FreqSubdayType: subdayAtTime, ActiveStartDate: 20200101, ActiveEndDate: noEndDate,
		ActiveStartTime: 10000, ActiveEndTime: 235959}
	for _, c := range change {
		c(&s)
	}
	return s
}

func factor(n int) func(*Schedule)   { return func(s *Schedule) { s.FreqRecurrenceFactor = n } }
func relative(n int) func(*Schedule) { return func(s *Schedule) { s.FreqRelativeInterval = n } }
func startTime(t int) func(*Schedule) {
	return func(s *Schedule) { s.ActiveStartTime = t }
}
func every(subdayType, n, from, to int) func(*Schedule) {
	return func(s *Schedule) {
		s.FreqSubdayType, s.FreqSubdayInterval, s.ActiveStartTime, s.ActiveEndTime = subdayType, n, from, to
	}
}
func dates(from, to int) func(*Schedule) {
	return func(s *Schedule) { s.ActiveStartDate, s.ActiveEndDate = from, to }
}

// scheduleCase is one schedule and what the import makes of it: the cron
// lines, or a reason containing want.
type scheduleCase struct {
	name   string
	s      Schedule
	crons  []string
	reason string
}

// scheduleCases are every value Microsoft's dbo.sysschedules page documents
// (learn.microsoft.com, "dbo.sysschedules (Transact-SQL)"): each freq_type;
// freq_interval as each freq_type reads it (every N days; each day of the
// week and sums of them; the day of the month; Sunday..Saturday, day,
// weekday and weekend day); each freq_subday_type (at the time, seconds,
// minutes, hours) with freq_subday_interval; each freq_relative_interval
// (unused, first, second, third, fourth, last); freq_recurrence_factor
// unused (0), 1 and more for weekly, monthly and monthly relative; and
// active_start_date, active_end_date, active_start_time and active_end_time,
// including the cases the page's values allow that cron cannot express.
var scheduleCases = []scheduleCase{
	// enabled
	{name: "disabled", s: at(freqDaily, 1, func(s *Schedule) { s.Enabled = false }), reason: "is disabled in Agent"},

	// freq_type 1: one time only (freq_interval unused)
	{name: "once, in the future", s: at(freqOnce, 0, dates(20270115, noEndDate), startTime(233000)), reason: "runs once, on 2027-01-15 at 23:30:00"},
	{name: "once, past", s: at(freqOnce, 0, dates(20250101, noEndDate)), reason: "ran once, on 2025-01-01"},

	// freq_type 4: daily, every freq_interval days
	{name: "daily", s: at(freqDaily, 1), crons: []string{"0 1 * * *"}},
	{name: "daily at 23:30", s: at(freqDaily, 1, startTime(233000)), crons: []string{"30 23 * * *"}},
	{name: "daily at midnight", s: at(freqDaily, 1, startTime(0)), crons: []string{"0 0 * * *"}},
	{name: "every 2 days", s: at(freqDaily, 2), reason: "every 2 days"},
	{name: "every 10 days", s: at(freqDaily, 10), reason: "every 10 days"},
	{name: "daily, interval 0", s: at(freqDaily, 0), reason: "freq_interval 0"},

	// freq_type 8: weekly, freq_interval a sum of 1 Sunday ... 64 Saturday
	{name: "weekly Sunday", s: at(freqWeekly, 1, factor(1)), crons: []string{"0 1 * * 0"}},
	{name: "weekly Monday", s: at(freqWeekly, 2, factor(1)), crons: []string{"0 1 * * 1"}},
	{name: "weekly Tuesday", s: at(freqWeekly, 4, factor(1)), crons: []string{"0 1 * * 2"}},
	{name: "weekly Wednesday", s: at(freqWeekly, 8, factor(1)), crons: []string{"0 1 * * 3"}},
	{name: "weekly Thursday", s: at(freqWeekly, 16, factor(1)), crons: []string{"0 1 * * 4"}},
	{name: "weekly Friday", s: at(freqWeekly, 32, factor(1)), crons: []string{"0 1 * * 5"}},
	{name: "weekly Saturday", s: at(freqWeekly, 64, factor(1)), crons: []string{"0 1 * * 6"}},
	{name: "weekly Monday to Friday", s: at(freqWeekly, 62, factor(1)), crons: []string{"0 1 * * 1-5"}},
	{name: "weekly Monday, Wednesday, Friday", s: at(freqWeekly, 2+8+32, factor(1)), crons: []string{"0 1 * * 1,3,5"}},
	{name: "weekly weekend", s: at(freqWeekly, 1+64, factor(1)), crons: []string{"0 1 * * 0,6"}},
	{name: "weekly every day", s: at(freqWeekly, 127, factor(1)), crons: []string{"0 1 * * *"}},
	{name: "weekly, recurrence factor unused (0)", s: at(freqWeekly, 2, factor(0)), crons: []string{"0 1 * * 1"}},
	{name: "every 2 weeks", s: at(freqWeekly, 2, factor(2)), reason: "every 2 weeks on Monday"},
	{name: "every 3 weeks", s: at(freqWeekly, 2+32, factor(3)), reason: "every 3 weeks on Monday and Friday"},
	{name: "weekly, no day", s: at(freqWeekly, 0, factor(1)), reason: "freq_interval 0"},
	{name: "weekly, beyond Saturday", s: at(freqWeekly, 128, factor(1)), reason: "freq_interval 128"},

	// freq_type 16: monthly, on the freq_interval day of the month
	{name: "monthly day 1", s: at(freqMonthly, 1, factor(1)), crons: []string{"0 1 1 * *"}},
	{name: "monthly day 15", s: at(freqMonthly, 15, factor(1)), crons: []string{"0 1 15 * *"}},
	{name: "monthly day 28", s: at(freqMonthly, 28, factor(1)), crons: []string{"0 1 28 * *"}},
	{name: "monthly, recurrence factor unused (0)", s: at(freqMonthly, 10, factor(0)), crons: []string{"0 1 10 * *"}},
	{name: "monthly day 29", s: at(freqMonthly, 29, factor(1)), reason: "day 29 of the month"},
	{name: "monthly day 31", s: at(freqMonthly, 31, factor(1)), reason: "day 31 of the month"},
	{name: "every 3 months", s: at(freqMonthly, 1, factor(3)), reason: "every 3 months on day 1"},
	{name: "monthly day 0", s: at(freqMonthly, 0, factor(1)), reason: "freq_interval 0"},
	{name: "monthly day 32", s: at(freqMonthly, 32, factor(1)), reason: "freq_interval 32"},

	// freq_type 32: monthly relative; freq_interval 1-7 Sunday..Saturday,
	// 8 day, 9 weekday, 10 weekend day; freq_relative_interval 1 first,
	// 2 second, 4 third, 8 fourth, 16 last
	{name: "first day", s: at(freqMonthlyRelative, 8, relative(1), factor(1)), crons: []string{"0 1 1 * *"}},
	{name: "second day", s: at(freqMonthlyRelative, 8, relative(2), factor(1)), crons: []string{"0 1 2 * *"}},
	{name: "third day", s: at(freqMonthlyRelative, 8, relative(4), factor(1)), crons: []string{"0 1 3 * *"}},
	{name: "fourth day", s: at(freqMonthlyRelative, 8, relative(8), factor(0)), crons: []string{"0 1 4 * *"}},
	{name: "last day", s: at(freqMonthlyRelative, 8, relative(16), factor(1)), reason: "last day of the month"},
	{name: "first Sunday", s: at(freqMonthlyRelative, 1, relative(1), factor(1)), reason: "first Sunday of the month"},
	{name: "second Monday", s: at(freqMonthlyRelative, 2, relative(2), factor(1)), reason: "second Monday of the month"},
	{name: "third Tuesday", s: at(freqMonthlyRelative, 3, relative(4), factor(1)), reason: "third Tuesday of the month"},
	{name: "fourth Wednesday", s: at(freqMonthlyRelative, 4, relative(8), factor(1)), reason: "fourth Wednesday of the month"},
	{name: "last Thursday", s: at(freqMonthlyRelative, 5, relative(16), factor(1)), reason: "last Thursday of the month"},
	{name: "first Friday", s: at(freqMonthlyRelative, 6, relative(1), factor(1)), reason: "first Friday of the month"},
	{name: "last Saturday", s: at(freqMonthlyRelative, 7, relative(16), factor(1)), reason: "last Saturday of the month"},
	{name: "first weekday", s: at(freqMonthlyRelative, 9, relative(1), factor(1)), reason: "first weekday of the month"},
	{name: "last weekday", s: at(freqMonthlyRelative, 9, relative(16), factor(1)), reason: "last weekday of the month"},
	{name: "first weekend day", s: at(freqMonthlyRelative, 10, relative(1), factor(1)), reason: "first weekend day of the month"},
	{name: "last weekend day", s: at(freqMonthlyRelative, 10, relative(16), factor(1)), reason: "last weekend day of the month"},
	{name: "every 2 months on the first day", s: at(freqMonthlyRelative, 8, relative(1), factor(2)), reason: "every 2 months on the first day"},
	{name: "relative interval unused (0)", s: at(freqMonthlyRelative, 8, relative(0), factor(1)), reason: "freq_relative_interval 0"},
	{name: "relative, freq_interval 11", s: at(freqMonthlyRelative, 11, relative(1), factor(1)), reason: "freq_interval 11"},

	// freq_type 64 and 128 (freq_interval unused), and an undocumented one
	{name: "when Agent starts", s: at(freqAgentStart, 0), reason: "when the SQL Server Agent service starts"},
	{name: "when idle", s: at(freqIdle, 0), reason: "when the computer is idle"},
	{name: "freq_type 2", s: at(2, 0), reason: "freq_type 2"},

	// freq_subday_type 1: at active_start_time
	{name: "at a time with seconds", s: at(freqDaily, 1, startTime(13030)), reason: "runs at 01:30:30"},
	// freq_subday_type 2: seconds
	{name: "every 30 seconds", s: at(freqDaily, 1, every(subdaySeconds, 30, 0, 235959)), reason: "every 30 seconds"},
	{name: "every 120 seconds", s: at(freqDaily, 1, every(subdaySeconds, 120, 0, 235959)), crons: []string{"*/2 * * * *"}},
	// freq_subday_type 4: minutes
	{name: "every minute", s: at(freqDaily, 1, every(subdayMinutes, 1, 0, 235959)), crons: []string{"* * * * *"}},
	{name: "every 15 minutes", s: at(freqDaily, 1, every(subdayMinutes, 15, 0, 235959)), crons: []string{"*/15 * * * *"}},
	{name: "every 15 minutes, 08:00 to 17:59:59", s: at(freqWeekly, 62, factor(1), every(subdayMinutes, 15, 80000, 175959)), crons: []string{"*/15 8-17 * * 1-5"}},
	{name: "every 15 minutes, 08:00 to 17:00 (ends on the interval)", s: at(freqDaily, 1, every(subdayMinutes, 15, 80000, 170000)),
		crons: []string{"*/15 8-16 * * *", "0 17 * * *"}},
	{name: "every 10 minutes from 00:05", s: at(freqDaily, 1, every(subdayMinutes, 10, 500, 235959)), crons: []string{"5/10 * * * *"}},
	{name: "every 20 minutes, 06:10 to 06:50", s: at(freqDaily, 1, every(subdayMinutes, 20, 61000, 65000)), crons: []string{"10/20 6 * * *"}},
	{name: "every 10 minutes, 06:10 to 06:40", s: at(freqDaily, 1, every(subdayMinutes, 10, 61000, 64000)), crons: []string{"10-40/10 6 * * *"}},
	{name: "every 30 minutes", s: at(freqMonthly, 1, factor(1), every(subdayMinutes, 30, 0, 235959)), crons: []string{"0,30 * 1 * *"}},
	{name: "every 45 minutes, 08:00 to 10:00 (a window ending mid-interval)", s: at(freqDaily, 1, every(subdayMinutes, 45, 80000, 100000)),
		crons: []string{"0,45 8 * * *", "30 9 * * *"}},
	{name: "every 45 minutes", s: at(freqDaily, 1, every(subdayMinutes, 45, 0, 235959)),
		crons: []string{"0,45 */3 * * *", "30 1/3 * * *", "15 2/3 * * *"}},
	{name: "every 7 minutes", s: at(freqDaily, 1, every(subdayMinutes, 7, 0, 235959)), reason: "7 different sets of minutes"},
	{name: "every 5 minutes from 08:00:30", s: at(freqDaily, 1, every(subdayMinutes, 5, 80030, 235959)), reason: "from 08:00:30"},
	// freq_subday_type 8: hours
	{name: "every hour", s: at(freqDaily, 1, every(subdayHours, 1, 0, 235959)), crons: []string{"0 * * * *"}},
	{name: "every 2 hours, 08:00 to 17:00 (a window ending mid-interval)", s: at(freqDaily, 1, every(subdayHours, 2, 80000, 170000)), crons: []string{"0 8-16/2 * * *"}},
	{name: "every 4 hours from 01:30", s: at(freqWeekly, 1, factor(1), every(subdayHours, 4, 13000, 235959)), crons: []string{"30 1/4 * * 0"}},
	{name: "every 6 hours", s: at(freqMonthlyRelative, 8, relative(1), factor(1), every(subdayHours, 6, 0, 235959)), crons: []string{"0 */6 1 * *"}},
	{name: "every 3 hours across midnight", s: at(freqDaily, 1, every(subdayHours, 3, 220000, 20000)), reason: "a window across midnight"},
	{name: "freq_subday_type 0", s: at(freqDaily, 1, every(0, 1, 0, 235959)), reason: "freq_subday_type 0"},
	{name: "freq_subday_type 16", s: at(freqDaily, 1, every(16, 1, 0, 235959)), reason: "freq_subday_type 16"},
	{name: "freq_subday_interval 0", s: at(freqDaily, 1, every(subdayMinutes, 0, 0, 235959)), reason: "freq_subday_interval 0"},
	{name: "active_start_time not a time", s: at(freqDaily, 1, startTime(246000)), reason: "active_start_time 246000"},
	{name: "active_end_time not a time", s: at(freqDaily, 1, every(subdayMinutes, 5, 0, 236100)), reason: "active_end_time 236100"},

	// active_start_date and active_end_date
	{name: "started today", s: at(freqDaily, 1, dates(today, noEndDate)), crons: []string{"0 1 * * *"}},
	{name: "start date unset (NULL)", s: at(freqDaily, 1, dates(0, noEndDate)), crons: []string{"0 1 * * *"}},
	{name: "starts in the future", s: at(freqDaily, 1, dates(20270301, noEndDate)), reason: "starts on 2027-03-01"},
	{name: "ended", s: at(freqDaily, 1, dates(20200101, 20251231)), reason: "ended on 2025-12-31"},
	{name: "ends in the future", s: at(freqDaily, 1, dates(20200101, 20271231)), reason: "ends on 2027-12-31"},
}

func TestScheduleConversion(t *testing.T) {
	t.Parallel()
	for _, c := range scheduleCases {
		t.Run(c.name, func(t *testing.T) {
			crons, reason := c.s.Crons(today)
			if c.reason != "" {
				require.Empty(t, crons)
				require.Contains(t, reason, c.reason)
				return
			}
			require.Empty(t, reason)
			require.Equal(t, c.crons, crons)
			for _, cr := range crons {
				_, err := schedule.Parse(cr, "Europe/Paris")
				require.NoError(t, err, "%q does not parse in internal/schedule", cr)
			}
		})
	}
}

// TestCronsFireAtAgentsTimes checks every converted case against Agent's
// rules as Microsoft's page states them, worked out day by day for two
// months (December 2026 and January 2027, in Europe/Paris, which changes no
// clock then): the cron lines, through internal/schedule's Spec (the code
// that fires schedules), fire at exactly the times Agent would.
func TestCronsFireAtAgentsTimes(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, loc)
	to := from.AddDate(0, 2, 0)
	converted := 0
	for _, c := range scheduleCases {
		if c.reason != "" {
			continue
		}
		converted++
		t.Run(c.name, func(t *testing.T) {
			crons, reason := c.s.Crons(today)
			require.Empty(t, reason)
			var got []time.Time
			for _, cr := range crons {
				spec, err := schedule.Parse(cr, "Europe/Paris")
				require.NoError(t, err)
				for at := spec.Next(from.Add(-time.Second)); at.Before(to); at = spec.Next(at) {
					got = append(got, at)
				}
			}
			slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
			want := agentFires(c.s, from, to)
			require.NotEmpty(t, want)
			require.Equal(t, format(want), format(got))
		})
	}
	require.Greater(t, converted, 30)
}

// agentFires works out when Agent runs s between from and to, day by day,
// from the page's words alone (not from the conversion's code): on each day
// the schedule's days include, at active_start_time and then every
// freq_subday_interval units up to active_end_time.
func agentFires(s Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		if !agentRunsOn(s, day) {
			continue
		}
		hms := func(v int) time.Duration {
			return time.Duration(v/10000)*time.Hour + time.Duration(v/100%100)*time.Minute + time.Duration(v%100)*time.Second
		}
		start, end := hms(s.ActiveStartTime), hms(s.ActiveEndTime)
		if s.FreqSubdayType == subdayAtTime {
			end = start
		}
		unit := map[int]time.Duration{subdayAtTime: time.Hour, subdaySeconds: time.Second, subdayMinutes: time.Minute, subdayHours: time.Hour}[s.FreqSubdayType]
		step := time.Duration(max(s.FreqSubdayInterval, 1)) * unit
		for t := start; t <= end; t += step {
			out = append(out, time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, day.Location()).Add(t))
		}
	}
	return out
}

func agentRunsOn(s Schedule, day time.Time) bool {
	switch s.FreqType {
	case freqDaily:
		return true // every 1 day: the only daily interval converted
	case freqWeekly:
		return s.FreqInterval&(1<<int(day.Weekday())) != 0
	case freqMonthly:
		return day.Day() == s.FreqInterval
	case freqMonthlyRelative:
		matches := func(d time.Time) bool {
			switch wd := d.Weekday(); {
			case s.FreqInterval <= 7:
				return int(wd) == s.FreqInterval-1
			case s.FreqInterval == 8:
				return true
			case s.FreqInterval == 9:
				return wd != time.Saturday && wd != time.Sunday
			default:
				return wd == time.Saturday || wd == time.Sunday
			}
		}
		if !matches(day) {
			return false
		}
		nth := 0
		for d := day.AddDate(0, 0, 1-day.Day()); !d.After(day); d = d.AddDate(0, 0, 1) {
			if matches(d) {
				nth++
			}
		}
		if s.FreqRelativeInterval == 16 {
			for d := day.AddDate(0, 0, 1); d.Month() == day.Month(); d = d.AddDate(0, 0, 1) {
				if matches(d) {
					return false
				}
			}
			return true
		}
		return map[int]int{1: 1, 2: 2, 4: 3, 8: 4}[s.FreqRelativeInterval] == nth
	}
	panic(fmt.Sprintf("freq_type %d is not converted", s.FreqType))
}

func format(ts []time.Time) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Format("2006-01-02 15:04:05 Mon\n"))
	}
	return b.String()
}

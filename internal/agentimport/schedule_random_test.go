package agentimport

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/schedule"
)

// randomSchedule draws a schedule from the values Microsoft's page documents
// (and a few around them), biased towards the ones that convert.
func randomSchedule(r *rand.Rand) Schedule {
	pick := func(vs ...int) int { return vs[r.IntN(len(vs))] }
	hms := func() int {
		return r.IntN(24)*10000 + pick(0, 0, 0, 5, 15, 30, 45, r.IntN(60))*100 + pick(0, 0, 0, 0, 30)
	}
	s := Schedule{Name: "r", Enabled: r.IntN(20) > 0, FreqType: pick(1, 4, 4, 8, 8, 16, 32, 64, 128),
		FreqSubdayType: pick(1, 1, 2, 4, 4, 8), FreqRecurrenceFactor: pick(0, 1, 1, 1, 2, 3),
		ActiveStartDate: pick(0, 20200101, 20200101, today, 20270301), ActiveEndDate: pick(noEndDate, noEndDate, noEndDate, 20251231, 20271231),
		ActiveStartTime: hms(), ActiveEndTime: pick(235959, 235959, hms())}
	switch s.FreqType {
	case freqDaily:
		s.FreqInterval = pick(1, 1, 1, 2, 0)
	case freqWeekly:
		s.FreqInterval = 1 + r.IntN(127)
	case freqMonthly:
		s.FreqInterval = 1 + r.IntN(31)
	case freqMonthlyRelative:
		s.FreqInterval = 1 + r.IntN(10)
		s.FreqRelativeInterval = pick(1, 2, 4, 8, 16)
	}
	switch s.FreqSubdayType {
	case subdaySeconds:
		s.FreqSubdayInterval = pick(10, 30, 60, 120, 300, 3600)
	case subdayMinutes:
		s.FreqSubdayInterval = pick(1+r.IntN(120), 5, 10, 15, 20, 30, 45)
	case subdayHours:
		s.FreqSubdayInterval = 1 + r.IntN(12)
	}
	return s
}

// Random schedules drawn from the documented values: each one either is
// reported with a reason, or becomes at most MaxCrons lines that parse and,
// through internal/schedule, fire at exactly Agent's times for a month.
func TestRandomSchedulesFireAtAgentsTimes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, 5))
	loc, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	from := time.Date(2027, 1, 1, 0, 0, 0, 0, loc) // no clock change in January
	to := from.AddDate(0, 1, 0)
	converted, reported := 0, 0
	for range 4000 {
		s := randomSchedule(r)
		crons, reason := s.Crons(today)
		if reason != "" {
			require.Empty(t, crons, "%+v", s)
			reported++
			continue
		}
		converted++
		require.LessOrEqual(t, len(crons), MaxCrons, "%+v", s)
		var got []time.Time
		for _, cr := range crons {
			spec, err := schedule.Parse(cr, loc.String())
			require.NoError(t, err, "%+v: %q", s, cr)
			for at := spec.Next(from.Add(-time.Second)); at.Before(to); at = spec.Next(at) {
				got = append(got, at)
			}
		}
		slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
		require.Equal(t, format(agentFires(s, from, to)), format(got), "%+v → %q", s, crons)
	}
	t.Logf("%d converted, %d reported", converted, reported)
	require.Greater(t, converted, 400)
	require.Greater(t, reported, 400)
}

// Whatever msdb holds, Crons answers without panicking: a reason, or lines
// internal/schedule parses.
func FuzzScheduleCrons(f *testing.F) {
	for _, c := range scheduleCases {
		s := c.s
		f.Add(s.Enabled, s.FreqType, s.FreqInterval, s.FreqSubdayType, s.FreqSubdayInterval, s.FreqRelativeInterval,
			s.FreqRecurrenceFactor, s.ActiveStartDate, s.ActiveEndDate, s.ActiveStartTime, s.ActiveEndTime)
	}
	f.Fuzz(func(t *testing.T, enabled bool, freqType, freqInterval, subdayType, subdayInterval, relative, factor, startDate, endDate, startTime, endTime int) {
		s := Schedule{Enabled: enabled, FreqType: freqType, FreqInterval: freqInterval, FreqSubdayType: subdayType,
			FreqSubdayInterval: subdayInterval, FreqRelativeInterval: relative, FreqRecurrenceFactor: factor,
			ActiveStartDate: startDate, ActiveEndDate: endDate, ActiveStartTime: startTime, ActiveEndTime: endTime}
		crons, reason := s.Crons(today)
		if reason != "" {
			if len(crons) > 0 {
				t.Fatalf("%+v: both a reason and crons", s)
			}
			return
		}
		if len(crons) == 0 || len(crons) > MaxCrons {
			t.Fatalf("%+v: %d crons", s, len(crons))
		}
		for _, cr := range crons {
			if _, err := schedule.Parse(cr, "UTC"); err != nil {
				t.Fatalf("%+v: %q: %v", s, cr, err)
			}
		}
	})
}

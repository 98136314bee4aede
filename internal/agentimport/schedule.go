package agentimport

import (
	"fmt"
	"strconv"
	"strings"
)

// Schedule is one row of msdb.dbo.sysschedules attached to a job. Its fields
// keep Agent's encoding (Microsoft's "dbo.sysschedules" page): dates are
// YYYYMMDD and times HHMMSS as integers, in the server's time zone.
type Schedule struct {
	ID                   int
	Name                 string
	Enabled              bool
	FreqType             int
	FreqInterval         int
	FreqSubdayType       int
	FreqSubdayInterval   int
	FreqRelativeInterval int
	FreqRecurrenceFactor int
	ActiveStartDate      int // YYYYMMDD; 0 when unset (Agent reads NULL as the day it was created)
	ActiveEndDate        int // YYYYMMDD; 99991231 is "no end"
	ActiveStartTime      int // HHMMSS
	ActiveEndTime        int // HHMMSS
}

// Agent's freq_type values.
const (
	freqOnce            = 1
	freqDaily           = 4
	freqWeekly          = 8
	freqMonthly         = 16
	freqMonthlyRelative = 32
	freqAgentStart      = 64
	freqIdle            = 128
)

// Agent's freq_subday_type values.
const (
	subdayAtTime  = 1
	subdaySeconds = 2
	subdayMinutes = 4
	subdayHours   = 8
)

// noEndDate is active_end_date's default, 9999-12-31.
const noEndDate = 99991231

// MaxCrons bounds how many cron expressions one Agent schedule may become.
// An interval that does not divide the hour (every 45 minutes) fires at
// different minutes in different hours, which one cron line cannot list; a
// few lines, one per pattern of minutes, fire at exactly Agent's times. More
// than this is reported rather than imported as a pile of schedules.
const MaxCrons = 4

var weekdays = [7]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// Crons returns the cron expressions (five fields: minute hour day-of-month
// month day-of-week, read in the server's time zone) that together fire
// exactly when Agent runs s, judged on today (YYYYMMDD, the server's date).
// When cron cannot say what s says, it returns no expression and the reason,
// a sentence a DBA acts on.
func (s Schedule) Crons(today int) ([]string, string) {
	if !s.Enabled {
		return nil, "is disabled in Agent, so it runs nothing"
	}
	if reason := s.dateRange(today); reason != "" {
		return nil, reason
	}
	dom, dow, reason := s.days()
	if reason != "" {
		return nil, reason
	}
	minutes, reason := s.minutesOfDay()
	if reason != "" {
		return nil, reason
	}
	return cronLines(minutes, dom, dow)
}

// dateRange explains why s cannot be a cron schedule today: it runs once,
// on a trigger cron has not, starts in the future or ends (cron has no
// dates).
func (s Schedule) dateRange(today int) string {
	switch s.FreqType {
	case freqOnce:
		at := fmt.Sprintf("%s at %s", formatDate(s.ActiveStartDate), formatTime(s.ActiveStartTime))
		if s.ActiveStartDate != 0 && s.ActiveStartDate < today {
			return "ran once, on " + at + ", which is past: nothing to import"
		}
		return "runs once, on " + at + ": a cron schedule repeats; enqueue the job's run for that time, or run it then with Run now"
	case freqAgentStart:
		return "runs when the SQL Server Agent service starts: ReadPast has no such trigger"
	case freqIdle:
		return "runs when the computer is idle: ReadPast has no such trigger"
	case freqDaily, freqWeekly, freqMonthly, freqMonthlyRelative:
	default:
		return fmt.Sprintf("has freq_type %d, which Agent does not document (1, 4, 8, 16, 32, 64 or 128)", s.FreqType)
	}
	if s.ActiveStartDate > today {
		return "starts on " + formatDate(s.ActiveStartDate) + ": a cron schedule has no start date, so it would fire before then; add it on that day"
	}
	switch {
	case s.ActiveEndDate == 0 || s.ActiveEndDate >= noEndDate:
	case s.ActiveEndDate < today:
		return "ended on " + formatDate(s.ActiveEndDate) + ": nothing to import"
	default:
		return "ends on " + formatDate(s.ActiveEndDate) + ": a cron schedule has no end date, so it would go on firing; add it by hand and remove it on that day"
	}
	return ""
}

// days returns the day-of-month and day-of-week fields of s (one of them
// '*'), or why cron cannot say which days s runs on. robfig/cron, which
// internal/schedule parses with, has no L or #, and fires when either of the
// two fields matches when both are set, so "the first Monday" (days 1-7 and
// Monday) cannot be written.
func (s Schedule) days() (dom, dow, reason string) {
	factor := s.FreqRecurrenceFactor
	switch s.FreqType {
	case freqDaily:
		switch {
		case s.FreqInterval == 1:
			return "*", "*", ""
		case s.FreqInterval > 1:
			return "", "", fmt.Sprintf("runs every %d days, counted from its start date across month ends: a cron day-of-month step starts again each month", s.FreqInterval)
		}
		return "", "", fmt.Sprintf("has freq_interval %d, which is no number of days (a daily schedule needs 1 or more)", s.FreqInterval)
	case freqWeekly:
		if s.FreqInterval < 1 || s.FreqInterval > 127 {
			return "", "", fmt.Sprintf("has freq_interval %d, which names no days of the week (a weekly schedule needs a sum of 1 Sunday, 2 Monday, 4 Tuesday, 8 Wednesday, 16 Thursday, 32 Friday, 64 Saturday)", s.FreqInterval)
		}
		var ds []int
		for d := range 7 {
			if s.FreqInterval&(1<<d) != 0 {
				ds = append(ds, d)
			}
		}
		if factor > 1 {
			return "", "", fmt.Sprintf("runs every %d weeks on %s: cron has no week counter", factor, dayNames(ds))
		}
		return "*", field(ds, 0, 6, false), ""
	case freqMonthly:
		if s.FreqInterval < 1 || s.FreqInterval > 31 {
			return "", "", fmt.Sprintf("has freq_interval %d, which is no day of the month", s.FreqInterval)
		}
		if factor > 1 {
			return "", "", fmt.Sprintf("runs every %d months on day %d, counted from a month Agent picks (the current one when the start date is past): cron cannot know which", factor, s.FreqInterval)
		}
		if s.FreqInterval > 28 {
			return "", "", fmt.Sprintf("runs on day %d of the month: cron skips the months that have no day %d, and Agent's documentation does not say what Agent does in them; if skipping them is right, add the cron schedule by hand with %d in its day-of-month field", s.FreqInterval, s.FreqInterval, s.FreqInterval)
		}
		return strconv.Itoa(s.FreqInterval), "*", ""
	case freqMonthlyRelative:
		which, ok := map[int]string{1: "first", 2: "second", 4: "third", 8: "fourth", 16: "last"}[s.FreqRelativeInterval]
		if !ok {
			return "", "", fmt.Sprintf("has freq_relative_interval %d, which is none of 1 first, 2 second, 4 third, 8 fourth, 16 last", s.FreqRelativeInterval)
		}
		var what string
		switch {
		case s.FreqInterval >= 1 && s.FreqInterval <= 7:
			what = weekdays[s.FreqInterval-1]
		case s.FreqInterval == 8:
			what = "day"
		case s.FreqInterval == 9:
			what = "weekday"
		case s.FreqInterval == 10:
			what = "weekend day"
		default:
			return "", "", fmt.Sprintf("has freq_interval %d, which is none of 1-7 Sunday to Saturday, 8 day, 9 weekday, 10 weekend day", s.FreqInterval)
		}
		if factor > 1 {
			return "", "", fmt.Sprintf("runs every %d months on the %s %s, counted from a month Agent picks: cron cannot know which", factor, which, what)
		}
		switch {
		case what == "day" && s.FreqRelativeInterval != 16:
			// The first to fourth day of the month are days 1 to 4.
			return strconv.Itoa(map[int]int{1: 1, 2: 2, 4: 3, 8: 4}[s.FreqRelativeInterval]), "*", ""
		case what == "day":
			return "", "", "runs on the last day of the month: cron here has no L for it"
		}
		return "", "", fmt.Sprintf("runs on the %s %s of the month: cron here cannot say it (it has no L or #, and fires on either field when both day fields are set)", which, what)
	}
	return "", "", fmt.Sprintf("has freq_type %d, which Agent does not document", s.FreqType)
}

// minutesOfDay returns the minutes after midnight at which s runs on a day it
// runs (Agent starts each day's series again at active_start_time), or why
// cron cannot fire at those times.
func (s Schedule) minutesOfDay() ([]int, string) {
	start, ok := secondsOfDay(s.ActiveStartTime)
	if !ok {
		return nil, fmt.Sprintf("has active_start_time %d, which is no time of day (HHMMSS)", s.ActiveStartTime)
	}
	if s.FreqSubdayType == subdayAtTime {
		if start%60 != 0 {
			return nil, "runs at " + formatTime(s.ActiveStartTime) + ": a cron schedule fires on whole minutes"
		}
		return []int{start / 60}, ""
	}
	unit, ok := map[int]int{subdaySeconds: 1, subdayMinutes: 60, subdayHours: 3600}[s.FreqSubdayType]
	if !ok {
		return nil, fmt.Sprintf("has freq_subday_type %d, which is none of 1 at a time, 2 seconds, 4 minutes, 8 hours", s.FreqSubdayType)
	}
	if s.FreqSubdayInterval < 1 {
		return nil, fmt.Sprintf("has freq_subday_interval %d, which is no interval", s.FreqSubdayInterval)
	}
	end, ok := secondsOfDay(s.ActiveEndTime)
	if !ok {
		return nil, fmt.Sprintf("has active_end_time %d, which is no time of day (HHMMSS)", s.ActiveEndTime)
	}
	step := s.FreqSubdayInterval * unit
	every := fmt.Sprintf("every %d %s", s.FreqSubdayInterval, map[int]string{1: "seconds", 60: "minutes", 3600: "hours"}[unit])
	switch {
	case step%60 != 0:
		return nil, "runs " + every + ": a cron schedule fires at most once a minute"
	case start%60 != 0:
		return nil, "runs " + every + " from " + formatTime(s.ActiveStartTime) + ": a cron schedule fires on whole minutes"
	case end < start:
		return nil, "runs " + every + " between " + formatTime(s.ActiveStartTime) + " and " + formatTime(s.ActiveEndTime) +
			", a window across midnight, and Agent's documentation does not say how it runs one"
	}
	var minutes []int
	for t := start; t <= end; t += step {
		minutes = append(minutes, t/60)
	}
	return minutes, ""
}

// cronLines writes minutes (of the day, ascending) on the days dom and dow as
// the fewest cron lines: the hours that share a set of minutes share a line.
func cronLines(minutes []int, dom, dow string) ([]string, string) {
	byHour := map[int][]int{}
	var hours []int
	for _, m := range minutes {
		h := m / 60
		if _, seen := byHour[h]; !seen {
			hours = append(hours, h)
		}
		byHour[h] = append(byHour[h], m%60)
	}
	var patterns []string
	hoursOf := map[string][]int{}
	for _, h := range hours {
		p := field(byHour[h], 0, 59, true)
		if _, seen := hoursOf[p]; !seen {
			patterns = append(patterns, p)
		}
		hoursOf[p] = append(hoursOf[p], h)
	}
	if len(patterns) > MaxCrons {
		return nil, fmt.Sprintf("runs at %d different sets of minutes in different hours (%s, …): that takes %d cron schedules, more than the %d an import makes",
			len(patterns), formatMinute(minutes[0]), len(patterns), MaxCrons)
	}
	lines := make([]string, len(patterns))
	for i, p := range patterns {
		lines[i] = fmt.Sprintf("%s %s %s * %s", p, field(hoursOf[p], 0, 23, true), dom, dow)
	}
	return lines, ""
}

// field writes values (ascending, within lo..hi) as one cron field: '*' for
// all of them, a range, a step (when steps is set: minutes and hours, where
// "*/15" reads better than a list; days of the week read better listed), or
// a list.
func field(values []int, lo, hi int, steps bool) string {
	n := len(values)
	switch {
	case n == hi-lo+1:
		return "*"
	case n == 1:
		return strconv.Itoa(values[0])
	}
	step := values[1] - values[0]
	for i := 2; i < n; i++ {
		if values[i]-values[i-1] != step || (step > 1 && !steps) {
			step = 0
			break
		}
	}
	first, last := values[0], values[n-1]
	switch {
	case step == 1:
		return fmt.Sprintf("%d-%d", first, last)
	case step > 1 && n > 2 && first == lo && last+step > hi:
		return fmt.Sprintf("*/%d", step)
	case step > 1 && n > 2 && last+step > hi:
		return fmt.Sprintf("%d/%d", first, step)
	case step > 1 && n > 2:
		return fmt.Sprintf("%d-%d/%d", first, last, step)
	}
	parts := make([]string, n)
	for i, v := range values {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// secondsOfDay reads an HHMMSS time as seconds after midnight.
func secondsOfDay(hhmmss int) (int, bool) {
	h, m, s := hhmmss/10000, hhmmss/100%100, hhmmss%100
	if hhmmss < 0 || h > 23 || m > 59 || s > 59 {
		return 0, false
	}
	return h*3600 + m*60 + s, true
}

func formatTime(hhmmss int) string {
	return fmt.Sprintf("%02d:%02d:%02d", hhmmss/10000, hhmmss/100%100, hhmmss%100)
}

func formatMinute(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

func formatDate(yyyymmdd int) string {
	if yyyymmdd == 0 {
		return "the day it was created"
	}
	return fmt.Sprintf("%04d-%02d-%02d", yyyymmdd/10000, yyyymmdd/100%100, yyyymmdd%100)
}

func dayNames(ds []int) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = weekdays[d]
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

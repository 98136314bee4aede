// Package schedule is ReadPast's recurring schedules (docs/SCHEDULES.md): the
// cron expressions and time zones they fire in, the checks a definition must
// pass before a store writes it, the plan of one fire, and the Scheduler that
// every node runs to fire what is due.
package schedule

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones on hosts without a zoneinfo database (Windows, scratch images)

	"github.com/robfig/cron/v3"

	"readpast/internal/queue"
)

// MaxCronLength bounds a cron expression.
const MaxCronLength = 256

// parser reads five fields (minute first), or six with seconds first, or a
// descriptor (@yearly, @monthly, @weekly, @daily, @midnight, @hourly).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron expression in a time zone: the fire times of a
// schedule. robfig/cron matches the fields; Spec adds the DST rules, which
// the library gets wrong (a daily 02:30 skipped on the day the clocks jump
// over it, run twice on the day they go back).
//
// The rules are ISC cron's, the ones DBAs know from Unix: a job at a fixed
// time (no '*' in its hour and minute fields, or a descriptor other than
// @hourly) whose wall-clock time falls in a gap fires once, when the gap ends;
// in a repeated hour it fires once, the first time. A job with '*' in its
// hour or minute field follows the real clock: nothing fires at wall-clock
// times that do not exist, and the repeated hour runs again.
type Spec struct {
	walls cron.Schedule // matches wall-clock times, represented as UTC
	loc   *time.Location
	fixed bool
}

// Parse reads expr in the zone named zone ("" is UTC). The error is a
// *queue.ValidationError naming the field, cron or time_zone.
func Parse(expr, zone string) (*Spec, error) {
	loc, err := LoadZone(zone)
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) (*Spec, error) {
		return nil, &queue.ValidationError{Field: "cron", Reason: fmt.Sprintf(format, args...)}
	}
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return bad("is empty: give five fields (minute hour day-of-month month day-of-week), six with seconds first, or a descriptor such as @daily")
	case len(expr) > MaxCronLength:
		return bad("is %d bytes, over the limit of %d", len(expr), MaxCronLength)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return bad("names a time zone: give it in time_zone instead")
	}
	if f, ok := emptyListItem(expr); ok {
		return bad("%q has an empty item in the list %q (two commas in a row, or one at an end): write each value once, e.g. 1,2,3,4", expr, f)
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return bad("%q cannot be read: %v", expr, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return bad("%q is an interval, which cron fields express anchored to the clock: write e.g. */5 * * * * for every five minutes", expr)
	}
	walls := *spec
	walls.Location = time.UTC
	return &Spec{walls: &walls, loc: loc, fixed: fixedTime(expr)}, nil
}

// emptyListItem returns the first field of expr whose comma-separated list
// has an empty item ("1,2,,4", ",5", "5,"): robfig/cron reads such an item
// as nothing and accepts the field (issue 25), so a typo passes unseen.
func emptyListItem(expr string) (string, bool) {
	for _, f := range strings.Fields(expr) {
		if !strings.Contains(f, ",") {
			continue
		}
		for _, item := range strings.Split(f, ",") {
			if item == "" {
				return f, true
			}
		}
	}
	return "", false
}

// LoadZone returns the IANA zone named name; "" is UTC. "Local" is refused: it
// would mean a different zone on every node.
func LoadZone(name string) (*time.Location, error) {
	bad := func(reason string) (*time.Location, error) {
		return nil, &queue.ValidationError{Field: "time_zone", Reason: reason}
	}
	switch {
	case name == "":
		return time.UTC, nil
	case name == "Local":
		return bad(`"Local" would be each node's own zone: give an IANA name such as Europe/Paris, or UTC`)
	case len(name) > 64:
		return bad("is longer than 64 bytes")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return bad(fmt.Sprintf("%q is not a known IANA time zone: give a name such as Europe/Paris, America/New_York or UTC", name))
	}
	return loc, nil
}

// fixedTime reports whether expr runs at fixed times of day: no '*' (or '?')
// in its minute and hour fields, or a descriptor other than @hourly.
func fixedTime(expr string) bool {
	if strings.HasPrefix(expr, "@") {
		return !strings.EqualFold(expr, "@hourly")
	}
	f := strings.Fields(expr)
	minute, hour := f[len(f)-5], f[len(f)-4] // the last five fields are minute … day-of-week
	return !strings.ContainsAny(minute+hour, "*?")
}

// Location is the zone the schedule fires in.
func (s *Spec) Location() *time.Location { return s.loc }

// maxSteps bounds the search of one Next: robfig/cron gives up after five
// years; a fixed-time job skips at most an hour of repeated seconds.
const maxSteps = 10000

// Next returns the first fire time after after, in the schedule's zone, or
// the zero time if the expression matches nothing in the next five years
// (30 February).
//
// It walks the zone's periods of constant UTC offset (time.ZoneBounds): within
// one, wall-clock time is UTC shifted by the offset, so the library's match on
// wall-clock time maps to one instant. Where a period ends in a gap (clocks
// jump forward), a fixed-time job whose wall-clock time lies in the gap fires
// at the period's end; in a period that begins with a repeated stretch (clocks
// went back), a fixed-time job skips the wall-clock times it already had.
func (s *Spec) Next(after time.Time) time.Time {
	from := after
	for range maxSteps {
		local := from.Add(time.Nanosecond).In(s.loc) // the period of the first instant considered
		_, off := local.Zone()
		start, end := local.ZoneBounds()
		w := s.walls.Next(wall(from, off))
		if w.IsZero() {
			return time.Time{}
		}
		at := w.Add(-time.Duration(off) * time.Second)
		if end.IsZero() || at.Before(end) {
			if s.fixed && s.repeated(at, start, off) {
				from = at
				continue
			}
			return at.In(s.loc)
		}
		if _, next := end.In(s.loc).Zone(); s.fixed && next > off && w.Before(wall(end, next)) {
			return end.In(s.loc) // w is in the gap: a fixed-time job fires when the gap ends
		}
		from = end.Add(-time.Nanosecond)
	}
	return time.Time{}
}

// repeated reports whether at, in the period that started at start with UTC
// offset off, has a wall-clock time the previous period already had.
func (s *Spec) repeated(at, start time.Time, off int) bool {
	if start.IsZero() {
		return false
	}
	_, prev := start.Add(-time.Nanosecond).In(s.loc).Zone()
	return prev > off && wall(at, off).Before(wall(start, prev))
}

// wall is t's wall-clock time at UTC offset off seconds, represented as UTC.
func wall(t time.Time, off int) time.Time {
	return time.Unix(t.Unix()+int64(off), int64(t.Nanosecond())).UTC()
}

// NextN returns up to n fire times after after, soonest first.
func (s *Spec) NextN(after time.Time, n int) []time.Time {
	var out []time.Time
	for t := after; len(out) < n; {
		if t = s.Next(t); t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Preview parses expr in zone and returns its next n fire times after after,
// in the zone: what the schedule form shows (with each one's UTC()).
func Preview(expr, zone string, after time.Time, n int) ([]time.Time, error) {
	s, err := Parse(expr, zone)
	if err != nil {
		return nil, err
	}
	return s.NextN(after, n), nil
}

package schedule

import (
	"fmt"
	"time"

	"readpast/internal/queue"
)

// DefaultMisfireGrace is how late a fire time may be handled and still count
// as on time rather than missed (Quartz's misfire threshold is the model).
const DefaultMisfireGrace = time.Minute

// maxCounted bounds how many missed fire times a plan counts one by one; past
// it the latest is found by searching back from now, and the count says
// "at least maxCounted".
const maxCounted = 10000

// Plan decides what one fire of the due schedule d does at now: the latest
// fire time due stands for all of them (a schedule never queues a backlog of
// runs), and the misfire policy decides whether it runs when it is more than
// grace late.
func Plan(d queue.DueSchedule, now time.Time, grace time.Duration) (queue.ScheduleFire, error) {
	spec, err := Parse(d.Cron, d.TimeZone)
	if err != nil {
		return queue.ScheduleFire{}, fmt.Errorf("schedule %s: %w", d.Name, err)
	}
	if d.NextFireAt.After(now) {
		return queue.ScheduleFire{}, fmt.Errorf("schedule %s is not due at %s (next fire time %s)", d.Name, now, d.NextFireAt)
	}
	latest, n := latestDue(spec, d.NextFireAt, now)
	f := queue.ScheduleFire{ID: d.ID, Version: d.Version, Name: d.Name, FireAt: latest, Missed: n - 1, Next: spec.Next(now)}
	if d.Misfire == queue.MisfireSkip && now.Sub(latest) > grace {
		f.SkipMissed, f.Missed = true, n
	}
	return f, nil
}

// latestDue returns the latest fire time at or before now, starting from
// first (a fire time at or before now), and how many there are from first on.
func latestDue(spec *Spec, first, now time.Time) (time.Time, int) {
	last, n := first, 1
	for ; n < maxCounted; n++ {
		next := spec.Next(last)
		if next.IsZero() || next.After(now) {
			return last, n
		}
		last = next
	}
	// Too many to count (a fast schedule after long downtime): the latest is
	// the last of the first window back from now that holds a fire time.
	for w := time.Second; now.Add(-w).After(last); w *= 2 {
		if t := spec.Next(now.Add(-w)); !t.IsZero() && !t.After(now) {
			last = t
			break
		}
	}
	for range maxCounted {
		next := spec.Next(last)
		if next.IsZero() || next.After(now) {
			break
		}
		last = next
	}
	return last, n
}

package request

import (
	"fmt"
	"net/url"
	"time"

	"readpast/internal/queue"
)

// utcLayouts are the wall-clock forms a date field sends (an HTML
// datetime-local input): read as UTC, the zone every page shows.
var utcLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02"}

// TimeParam reads a time from the query, as the log's since and until take
// it in the API and on the log page alike: an RFC 3339 instant, a UTC wall
// clock time (2026-01-02T15:04, what the page's date fields send), or a
// duration meaning that long before now (24h is the last day). Absent: zero.
func TimeParam(q url.Values, name string, now time.Time) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range utcLayouts {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, &queue.ValidationError{Field: name,
		Reason: fmt.Sprintf("%q is neither a time (2026-01-02T15:04:05Z, or 2026-01-02T15:04 in UTC) nor a duration ago (90m, 24h)", v)}
}

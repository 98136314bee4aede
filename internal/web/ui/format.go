package ui

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"readpast/web/templates"
)

// Pages show times in UTC: a DBA compares them with server logs and the
// execution log, never with the browser's zone.

// showTime formats t for a table: the time of day when it is today, else the date too.
func showTime(t, now time.Time) templates.Time {
	if t.IsZero() {
		return templates.Time{}
	}
	t, now = t.UTC(), now.UTC()
	short := t.Format("15:04:05")
	if t.Year() != now.Year() || t.YearDay() != now.YearDay() {
		short = t.Format("2006-01-02 15:04")
	}
	return templates.Time{Short: short, Full: t.Format(time.RFC3339)}
}

// dateTime formats t with its date always, to the minute.
func dateTime(t time.Time) templates.Time {
	t = t.UTC()
	return templates.Time{Short: t.Format("2006-01-02 15:04"), Full: t.Format(time.RFC3339)}
}

// showDuration writes d the way a DBA reads it: 850ms, 12.4s, 3m05s, 2h10m.
func showDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0ms"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// firstLine is the start of a text for a table cell: its first non-blank line,
// cut to max runes with an ellipsis, "…" appended when more lines follow.
func firstLine(s string, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.TrimSpace(lines[0])
	more := len(lines) > 1
	if utf8.RuneCountInString(line) > max {
		r := []rune(line)
		line, more = string(r[:max]), true
	}
	if more {
		line += " …"
	}
	return line
}

// taskURL is a task's page.
func taskURL(id int64) string { return "/tasks/" + strconv.FormatInt(id, 10) }

// withQuery appends the non-empty values to path as a query string, in a stable order.
func withQuery(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// safeReturn accepts only a local path to go back to after a form post (no
// scheme, no host, no protocol-relative "//"), else fallback.
func safeReturn(v, fallback string) string {
	if v == "" || !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.HasPrefix(v, `/\`) {
		return fallback
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.ContainsAny(v, "\r\n") {
		return fallback
	}
	return v
}

package templates

import (
	"strconv"
	"strings"
)

// formatCount writes n with thin-space thousands separators: 12 345.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u2009')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// FormatCount is formatCount for handlers that send counts over the websocket,
// so live values look like rendered ones.
func FormatCount(n int64) string { return formatCount(n) }

func formatID(id int64) string { return strconv.FormatInt(id, 10) }

func statusText(status int) string {
	switch status {
	case 400:
		return "Bad request"
	case 401:
		return "Sign in needed"
	case 403:
		return "Forbidden"
	case 404:
		return "Not found"
	case 409:
		return "Conflict"
	case 422:
		return "Refused"
	case 503:
		return "Unavailable"
	}
	if status >= 500 {
		return "Server error"
	}
	return "Error"
}

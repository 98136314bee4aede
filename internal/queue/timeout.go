package queue

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxTimeout is the longest timeout a task (or a schedule's task) may have.
// Every way in (the API, the forms, the store) holds this one rule, so what a
// form accepts the API accepts too.
const MaxTimeout = 30 * 24 * time.Hour

// TimeoutSeconds reads a timeout given in seconds, as the API and the forms
// take it: 0 is no limit; negative, not a number, or above MaxTimeout is a
// *ValidationError on field that says the allowed range.
func TimeoutSeconds(field string, s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, &ValidationError{Field: field, Reason: "is not a number of seconds: give 0 (no limit) up to " + maxTimeoutText}
	}
	if s < 0 || s > MaxTimeout.Seconds() {
		return 0, &ValidationError{Field: field, Reason: fmt.Sprintf("is %s seconds%s: use 0 (no limit) up to %s",
			strconv.FormatFloat(s, 'f', -1, 64), inDays(s), maxTimeoutText)}
	}
	return time.Duration(s * float64(time.Second)), nil
}

var maxTimeoutText = fmt.Sprintf("%d (%d days)", int64(MaxTimeout.Seconds()), int64(MaxTimeout.Hours()/24))

// inDays is " (40 days)" for a number of seconds of a day or more, so the
// refusal of a long timeout says what the number means.
func inDays(s float64) string {
	days := s / 86400
	if days < 1 {
		return ""
	}
	return " (" + strconv.FormatFloat(math.Round(days*10)/10, 'f', -1, 64) + " days)"
}

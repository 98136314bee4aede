package alerts

import (
	"regexp"
	"slices"
	"strconv"

	"readpast/internal/queue"
)

// The facts of an attempt's error, read from its text as the targets word
// it: SQL Server's "Msg 1205, Level 13, State 51, …" (sqlrun's sqlcmd
// form) and PostgreSQL's "… (SQLSTATE 40P01)" (pgx's form).
var (
	mssqlErrorRE = regexp.MustCompile(`Msg (\d+), Level (\d+),`)
	sqlstateRE   = regexp.MustCompile(`\(SQLSTATE ([0-9A-Z]{5})\)`)
)

// ErrorFacts are what an error text says of its server error.
type ErrorFacts struct {
	Number   int    // SQL Server error number; 0: none
	Severity int    // SQL Server severity (level)
	SQLState string // PostgreSQL SQLSTATE; "": none
}

// ParseError reads the server error facts of an attempt's error text: the
// last SQL Server message (the driver's last is the one that ended the
// batch) and the SQLSTATE.
func ParseError(text string) ErrorFacts {
	var f ErrorFacts
	if m := mssqlErrorRE.FindAllStringSubmatch(text, -1); len(m) > 0 {
		last := m[len(m)-1]
		f.Number, _ = strconv.Atoi(last[1])
		f.Severity, _ = strconv.Atoi(last[2])
	}
	if m := sqlstateRE.FindStringSubmatch(text); m != nil {
		f.SQLState = m[1]
	}
	return f
}

// matchTaskFailed applies a task_failed rule's filters. Error filters are
// alternatives: an error matches when it has the number, or a severity at
// least the minimum, or the SQLSTATE class.
func matchTaskFailed(r Rule, e queue.AlertEvent) bool {
	if len(r.Queues) > 0 && !slices.Contains(r.Queues, e.Queue) {
		return false
	}
	if len(r.Schedules) > 0 && !slices.Contains(r.Schedules, e.Schedule) {
		return false
	}
	if len(r.Jobs) > 0 && !slices.Contains(r.Jobs, e.Job) || len(r.Targets) > 0 && !slices.Contains(r.Targets, e.Target) {
		return false
	}
	if r.ErrorNumber == 0 && r.MinSeverity == 0 && r.SQLStateClass == "" {
		return true
	}
	f := ParseError(e.Error)
	return (r.ErrorNumber != 0 && f.Number == r.ErrorNumber) ||
		(r.MinSeverity != 0 && f.Number != 0 && f.Severity >= r.MinSeverity) ||
		(r.SQLStateClass != "" && len(f.SQLState) == 5 && f.SQLState[:2] == r.SQLStateClass)
}

package agentimport

import (
	"bytes"
	"encoding/json"
)

// Document is the body of `POST /api/jobs` (issue 29, docs/API.md) for one
// Agent job. Enabled is always false: an imported job is paused, so that it
// does not run beside Agent's until the DBA disables one and enables the other.
// Overlap is Agent's: a start while the job runs is skipped (docs/
// SCHEDULES.md, "Coming from SQL Server Agent").
type Document struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Category    string        `json:"category"`
	Enabled     bool          `json:"enabled"`
	Overlap     string        `json:"overlap"`
	Steps       []StepDoc     `json:"steps"`
	Schedules   []ScheduleDoc `json:"schedules"`
}

// StepDoc is one step of a Document. OnSuccess and OnFailure are "next",
// "step:NAME", "quit_success" or "quit_failure"; RetryInterval is a Go
// duration ("5m"), as the API reads it.
type StepDoc struct {
	Name          string `json:"name"`
	Body          string `json:"body"`
	Target        string `json:"target,omitempty"`
	RetryAttempts int    `json:"retry_attempts"`
	RetryInterval string `json:"retry_interval"`
	OnSuccess     string `json:"on_success"`
	OnFailure     string `json:"on_failure"`
}

// ScheduleDoc is one schedule of a Document: a five-field cron expression in
// an IANA time zone, with Agent's misfire behaviour (docs/SCHEDULES.md,
// "Coming from SQL Server Agent"): starts missed while the service was down
// do not run.
type ScheduleDoc struct {
	Cron     string `json:"cron"`
	TimeZone string `json:"time_zone"`
	Misfire  string `json:"misfire"`
}

// agentSchedule is a cron line in zone with Agent's misfire.
func agentSchedule(cron, zone string) ScheduleDoc {
	return ScheduleDoc{Cron: cron, TimeZone: zone, Misfire: "skip"}
}

// JSON encodes d as the API takes it, indented, with '<', '>' and '&' in
// bodies kept as written (T-SQL is full of them).
func (d Document) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Package jobs is SQL Server Agent's jobs in ReadPast (docs/JOBS.md): it
// checks a job's definition, compiles its flow into the plan a store
// persists and follows (queue.PlanStep), and starts and cancels runs. It
// decides; the store writes.
package jobs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"readpast/internal/queue"
)

// Definition is a job as the API's POST /api/jobs takes it.
type Definition struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Category    string        `json:"category,omitempty"`
	Queue       string        `json:"queue,omitempty"`   // the queue its step tasks run on; "" is "default"
	Overlap     string        `json:"overlap,omitempty"` // skip (the default: a job never runs twice at once) or allow
	Enabled     *bool         `json:"enabled,omitempty"` // nil: true
	Steps       []StepDef     `json:"steps"`
	Schedules   []ScheduleDef `json:"schedules,omitempty"`
}

// StepDef is one step of a Definition. The actions are "next", "step:NAME",
// "quit_success" or "quit_failure"; left out, Agent's defaults: on success
// the next step (quit with success after the last), on failure quit with
// failure.
type StepDef struct {
	Name          string   `json:"name"`
	Body          string   `json:"body"`
	Target        string   `json:"target,omitempty"`
	Targets       []string `json:"targets,omitempty"`      // fan out: names and tag:NAME, resolved when a run starts
	FanOutLimit   int      `json:"fanout_limit,omitempty"` // of a fan-out: how many targets run at once (0: all)
	Timeout       Duration `json:"timeout,omitempty"`
	Transactional bool     `json:"transactional,omitempty"`
	RetryAttempts int      `json:"retry_attempts,omitempty"`
	RetryInterval Duration `json:"retry_interval,omitempty"`
	OnSuccess     string   `json:"on_success,omitempty"`
	OnFailure     string   `json:"on_failure,omitempty"`
}

// ScheduleDef is one schedule of a Definition: the schedules' cron model.
type ScheduleDef struct {
	Cron     string `json:"cron"`
	TimeZone string `json:"time_zone,omitempty"`
	Misfire  string `json:"misfire,omitempty"`
}

// Duration is a duration in JSON: a Go duration string ("5m", "90s") or a
// number of seconds (Agent's retry interval is in minutes; write "5m").
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a duration: write it as 30s, 5m or 1h30m", s)
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f < 0 || f > 1e9 {
		return fmt.Errorf("%s is not a duration: write a number of seconds, or a string such as 5m", b)
	}
	*d = Duration(time.Duration(f * float64(time.Second)))
	return nil
}

// Parse reads a Definition from the API's JSON as strictly as the API reads
// any body (encoding/json/v2's defaults): a field it does not know (a
// misspelt on_failure would otherwise quietly take the default), a key given
// twice, invalid UTF-8 are refused.
func Parse(body []byte) (Definition, error) {
	var d Definition
	if err := jsonv2.Unmarshal(body, &d, jsonv2.RejectUnknownMembers(true)); err != nil {
		return Definition{}, fmt.Errorf("the job definition is not the JSON of a job: %v", err)
	}
	return d, nil
}

// ParseDocument reads the JSON of POST /api/jobs as a job enabled or not
// whatever the document says (an import makes its jobs paused, so they do
// not run beside the Agent they came from); a document that is not a job's
// is a *queue.ValidationError of the body.
func ParseDocument(body []byte, enabled bool) (Definition, error) {
	d, err := Parse(body)
	if err != nil {
		return Definition{}, &queue.ValidationError{Field: "body", Reason: err.Error()}
	}
	d.Enabled = &enabled
	return d, nil
}

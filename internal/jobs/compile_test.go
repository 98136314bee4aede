package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

func TestCompileFollowsAgentsDefaults(t *testing.T) {
	d, err := Parse([]byte(`{"name": "n", "steps": [
		{"name": "a", "body": "SELECT 1"},
		{"name": "b", "body": "SELECT 2", "on_failure": "step:a", "retry_attempts": 2, "retry_interval": "5m"},
		{"name": "c", "body": "SELECT 3", "retry_interval": 90}]}`))
	require.NoError(t, err)
	j, warnings, err := Compile(d, "alice", 0)
	require.NoError(t, err)
	require.Empty(t, warnings)
	require.Equal(t, "alice", j.Owner)
	require.True(t, j.Enabled)
	require.Equal(t, queue.DefaultQueue, j.Queue)
	require.Equal(t, queue.OverlapSkip, j.Overlap)
	require.Equal(t, 1, j.Steps[0].OnSuccess, "on success: the next step")
	require.Equal(t, queue.StepQuitFailure, j.Steps[0].OnFailure, "on failure: quit with failure")
	require.Equal(t, 0, j.Steps[1].OnFailure, "step:a")
	require.Equal(t, 3, j.Steps[1].MaxAttempts)
	require.Equal(t, 5*time.Minute, j.Steps[1].RetryInterval)
	require.Equal(t, 90*time.Second, j.Steps[2].RetryInterval, "a number is seconds")
	require.Equal(t, queue.StepQuitSuccess, j.Steps[2].OnSuccess, "next after the last step quits with success")
}

func TestCompileRefusesBadFlows(t *testing.T) {
	for doc, field := range map[string]string{
		`{"name": "n", "steps": []}`: "steps",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "on_failure": "step:z"}]}`:                                      "steps[0].on_failure",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "on_success": "goto b"}]}`:                                      "steps[0].on_success",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1"}, {"name": "a", "body": "SELECT 2"}]}`:                           "steps[1].name",
		`{"name": "n", "steps": [{"name": "a", "body": " "}]}`:                                                                     "steps[0].body",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "retry_attempts": -1}]}`:                                        "steps[0].retry_attempts",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "target": "a b"}]}`:                                             "steps[0].target",
		`{"name": "n", "overlap": "sometimes", "steps": [{"name": "a", "body": "SELECT 1"}]}`:                                      "overlap",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1"}], "schedules": [{"cron": "61 * * * *"}]}`:                       "schedules[0].cron",
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1"}], "schedules": [{"cron": "@daily", "time_zone": "Mars/Base"}]}`: "schedules[0].time_zone",
		`{"name": "` + strings.Repeat("x", 61) + `", "steps": [{"name": "a", "body": "SELECT 1"}]}`:                                "name",
	} {
		d, err := Parse([]byte(doc))
		require.NoError(t, err, doc)
		_, _, err = Compile(d, "alice", 0)
		var ve *queue.ValidationError
		require.ErrorAs(t, err, &ve, doc)
		require.Equal(t, field, ve.Field, doc)
	}
	var steps []string
	for i := range MaxSteps + 1 {
		steps = append(steps, `{"name": "s`+strings.Repeat("x", i)+`", "body": "SELECT 1"}`)
	}
	d, err := Parse([]byte(`{"name": "n", "steps": [` + strings.Join(steps, ",") + `]}`))
	require.NoError(t, err)
	_, _, err = Compile(d, "alice", 0)
	require.True(t, queue.IsValidation(err), "101 steps")
}

func TestParseIsStrict(t *testing.T) {
	for _, doc := range []string{
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "on_succes": "next"}]}`,
		`{"name": "n", "name": "m", "steps": []}`,
		`{"name": "n", "steps": [{"name": "a", "body": "SELECT 1", "retry_interval": "soon"}]}`,
		`{"name": "n"} {}`,
	} {
		_, err := Parse([]byte(doc))
		require.Error(t, err, doc)
	}
}

func TestUnreachableStepsAreWarnedOf(t *testing.T) {
	d, err := Parse([]byte(`{"name": "n", "steps": [
		{"name": "a", "body": "SELECT 1", "on_success": "step:c"},
		{"name": "b", "body": "SELECT 2"},
		{"name": "c", "body": "SELECT 3", "on_failure": "step:a"}]}`))
	require.NoError(t, err)
	_, warnings, err := Compile(d, "alice", 0)
	require.NoError(t, err)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "step b is unreachable")
}

func TestStepNextEndsLoopsAtTheBound(t *testing.T) {
	plan := []queue.PlanStep{{Name: "a", OnSuccess: 0, OnFailure: queue.StepQuitFailure}}
	next, end, _ := queue.StepNext(plan, 0, queue.StateSucceeded, queue.MaxStepExecutions-1)
	require.Equal(t, queue.RunRunning, end)
	require.Equal(t, 0, next)
	_, end, reason := queue.StepNext(plan, 0, queue.StateSucceeded, queue.MaxStepExecutions)
	require.Equal(t, queue.RunFailed, end)
	require.Equal(t, queue.StepBoundReason, reason)
	_, end, _ = queue.StepNext(plan, 0, queue.StateCancelled, 1)
	require.Equal(t, queue.RunCancelled, end)
	_, end, reason = queue.StepNext(plan, 0, queue.StateFailed, 1)
	require.Equal(t, queue.RunFailed, end)
	require.Equal(t, "step a failed: quit reporting failure", reason)
}

package agentimport

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func tsql(id int, name, command string, change ...func(*Step)) Step {
	s := Step{ID: id, Name: name, Subsystem: "TSQL", Command: command,
		OnSuccessAction: actionNextStep, OnFailAction: actionQuitFailure}
	for _, c := range change {
		c(&s)
	}
	return s
}

func onSuccess(a, step int) func(*Step) {
	return func(s *Step) { s.OnSuccessAction, s.OnSuccessStepID = a, step }
}
func onFail(a, step int) func(*Step) {
	return func(s *Step) { s.OnFailAction, s.OnFailStepID = a, step }
}

var opts = Options{TimeZone: "Europe/Paris", Today: today}

// Each of Agent's four actions maps to the API's, a go-to by the name of the
// step it goes to; retry attempts carry over and the retry interval, in
// minutes in Agent, becomes a duration; a step's database becomes a USE batch
// of its own before the command, which is kept byte for byte.
func TestConvertMapsStepsAndFlow(t *testing.T) {
	t.Parallel()
	j := Job{Name: "nightly-maint", Description: "checks and rebuilds", Category: "Database Maintenance", Enabled: true, StartStepID: 1,
		Steps: []Step{
			tsql(1, "check", "DBCC CHECKDB(Ops) WITH NO_INFOMSGS", func(s *Step) { s.Database = "Ops" }, onFail(actionGoToStep, 3)),
			tsql(2, "rebuild", "EXEC dbo.rebuild_indexes\nGO\nSELECT 1 WHERE 1 < 2", func(s *Step) { s.Database = "we]ird"; s.RetryAttempts, s.RetryInterval = 2, 5 },
				onSuccess(actionQuitSuccess, 0), onFail(actionGoToStep, 3)),
			tsql(3, "notify", "INSERT INTO dbo.maint_failures DEFAULT VALUES", onSuccess(actionQuitFailure, 0), onFail(actionQuitFailure, 0)),
		},
		Schedules: []Schedule{at(freqDaily, 1), at(freqWeekly, 2, factor(3), func(s *Schedule) { s.Name = "fortnightly" })},
	}
	c := Convert(j, opts)
	require.NotNil(t, c.Doc)
	want := `{
  "name": "nightly-maint",
  "description": "checks and rebuilds",
  "category": "Database Maintenance",
  "enabled": false,
  "overlap": "skip",
  "steps": [
    {
      "name": "check",
      "body": "USE [Ops];\nGO\nDBCC CHECKDB(Ops) WITH NO_INFOMSGS",
      "retry_attempts": 0,
      "retry_interval": "0m",
      "on_success": "next",
      "on_failure": "step:notify"
    },
    {
      "name": "rebuild",
      "body": "USE [we]]ird];\nGO\nEXEC dbo.rebuild_indexes\nGO\nSELECT 1 WHERE 1 < 2",
      "retry_attempts": 2,
      "retry_interval": "5m",
      "on_success": "quit_success",
      "on_failure": "step:notify"
    },
    {
      "name": "notify",
      "body": "INSERT INTO dbo.maint_failures DEFAULT VALUES",
      "retry_attempts": 0,
      "retry_interval": "0m",
      "on_success": "quit_failure",
      "on_failure": "quit_failure"
    }
  ],
  "schedules": [
    {
      "cron": "0 1 * * *",
      "time_zone": "Europe/Paris",
      "misfire": "skip"
    }
  ]
}
`
	doc, err := c.Doc.JSON()
	require.NoError(t, err)
	require.Equal(t, want, string(doc))
	var back Document
	require.NoError(t, json.Unmarshal(doc, &back))
	_, err = time.ParseDuration(back.Steps[1].RetryInterval)
	require.NoError(t, err, "retry_interval is a Go duration")

	require.Equal(t, []string{`job "nightly-maint", schedule "fortnightly": not imported: runs every 3 weeks on Monday: cron has no week counter`}, lineStrings(c.Lines))
}

// A job with a step that is not T-SQL is not imported at all (leaving the
// step out would change what the job does): the step is reported with its
// subsystem, then the job.
func TestConvertReportsNonTSQLSteps(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"CmdExec", "PowerShell", "SSIS", "ANALYSISCOMMAND", "Distribution"} {
		j := Job{Name: "export", StartStepID: 1, Enabled: true, Steps: []Step{
			tsql(1, "extract", "EXEC dbo.extract"),
			tsql(2, "send", `copy c:\out\x.csv \\files\in`, func(s *Step) { s.Subsystem = sub }),
		}}
		c := Convert(j, opts)
		require.Nil(t, c.Doc, sub)
		lines := lineStrings(c.Lines)
		require.Len(t, lines, 2, sub)
		require.Contains(t, lines[0], `job "export", step 2 "send": not imported: runs in Agent's `+sub+` subsystem`)
		require.Contains(t, lines[1], `job "export": not imported: a step above cannot be converted`)
	}
}

// What ReadPast cannot do as Agent does is reported, never guessed: a go-to
// to a step that does not exist, a job that starts at another step than its
// first, no steps, an unknown action; and what is imported but differs (an
// Agent token, a database user, an output file, notifications, a job Agent
// deletes, a disabled job) is reported as a line to check.
func TestConvertReports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		job      Job
		imported bool
		lines    []string
	}{
		{"go-to to a missing step", Job{Name: "j", StartStepID: 1, Enabled: true, Steps: []Step{tsql(1, "a", "SELECT 1", onFail(actionGoToStep, 7))}}, false,
			[]string{`job "j", step 1 "a": not imported: on failure goes to step 7, which the job does not have`, `job "j": not imported: a step above`}},
		{"unknown action", Job{Name: "j", StartStepID: 1, Enabled: true, Steps: []Step{tsql(1, "a", "SELECT 1", onSuccess(0, 0))}}, false,
			[]string{`job "j", step 1 "a": not imported: on success has action 0`, `job "j": not imported: a step above`}},
		{"starts at step 2", Job{Name: "j", StartStepID: 2, Enabled: true, Steps: []Step{tsql(1, "a", "SELECT 1"), tsql(2, "b", "SELECT 2")}}, false,
			[]string{`job "j": not imported: starts at step 2, not at its first step 1`}},
		{"no steps", Job{Name: "j", StartStepID: 1, Enabled: true}, false, []string{`job "j": not imported: has no steps`}},
		{"empty command", Job{Name: "j", StartStepID: 1, Enabled: true, Steps: []Step{tsql(1, "a", "  ")}}, false,
			[]string{`job "j", step 1 "a": not imported: has an empty command`, `job "j": not imported: a step above`}},
		{"too many steps", Job{Name: "j", StartStepID: 1, Enabled: true, Steps: make([]Step, MaxSteps+1)}, false,
			[]string{`job "j": not imported: has 101 steps, and a ReadPast job has at most 100`}},
		{"checks", Job{Name: "j", StartStepID: 1, Category: "[Uncategorized (Local)]", NotifyEmail: 2, NotifyPage: 3, DeleteLevel: 1,
			Steps: []Step{tsql(1, "a", "BACKUP DATABASE x TO DISK = N'x_$(ESCAPE_SQUOTE(STRTDT)).bak'", func(s *Step) {
				s.DatabaseUser, s.OutputFile = "reporter", `C:\logs\a.txt`
			}, onFail(actionNextStep, 0))}}, true,
			[]string{
				`job "j", step 1 "a": check: uses Agent's token $(ESCAPE_SQUOTE(STRTDT)), which only Agent replaces`,
				`job "j", step 1 "a": check: runs as the database user [reporter] in Agent`,
				`job "j", step 1 "a": check: writes its output to the file C:\logs\a.txt in Agent`,
				`job "j", step 1 "a": check: is the last step and goes to the next step on failure`,
				`job "j": check: is disabled in Agent`,
				`job "j": check: e-mails an Agent operator when it fails`,
				`job "j": check: pages an Agent operator when it completes`,
				`job "j": check: is deleted by Agent when it succeeds`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Convert(c.job, opts)
			require.Equal(t, c.imported, got.Doc != nil)
			lines := lineStrings(got.Lines)
			require.Len(t, lines, len(c.lines), strings.Join(lines, "\n"))
			for i, l := range c.lines {
				require.True(t, strings.HasPrefix(lines[i], l), "line %d:\n%s\nwant a line starting\n%s", i, lines[i], l)
			}
			if got.Doc != nil {
				require.Empty(t, got.Doc.Category, "Agent's [Uncategorized (Local)] is no category")
				require.False(t, got.Doc.Enabled)
			}
		})
	}
}

// --target names the target every step runs on; without it the step has no
// target field and runs on the node's default target.
func TestConvertTarget(t *testing.T) {
	t.Parallel()
	j := Job{Name: "j", StartStepID: 1, Enabled: true, Steps: []Step{tsql(1, "a", "SELECT 1")}}
	o := opts
	o.Target = "agent-server"
	doc, err := Convert(j, o).Doc.JSON()
	require.NoError(t, err)
	require.Contains(t, string(doc), `"target": "agent-server"`)
	doc, err = Convert(j, opts).Doc.JSON()
	require.NoError(t, err)
	require.NotContains(t, string(doc), `"target"`)
}

// An Agent schedule whose minutes differ from hour to hour becomes several
// cron schedules, and the report says so.
func TestConvertSplitSchedule(t *testing.T) {
	t.Parallel()
	j := Job{Name: "j", StartStepID: 1, Enabled: true, Steps: []Step{tsql(1, "a", "SELECT 1")},
		Schedules: []Schedule{at(freqDaily, 1, every(subdayMinutes, 45, 80000, 100000))}}
	c := Convert(j, opts)
	require.Equal(t, []ScheduleDoc{agentSchedule("0,45 8 * * *", "Europe/Paris"), agentSchedule("30 9 * * *", "Europe/Paris")}, c.Doc.Schedules)
	require.Equal(t, []string{`job "j", schedule "s": check: fires at minutes that differ from hour to hour, so it became 2 cron schedules (0,45 8 * * *; 30 9 * * *) that together fire at Agent's times`},
		lineStrings(c.Lines))
}

func TestWindowsZonesLoad(t *testing.T) {
	t.Parallel()
	for windows, iana := range windowsZones {
		_, err := time.LoadLocation(iana)
		require.NoError(t, err, "%s → %s", windows, iana)
	}
	require.Equal(t, "Europe/Paris", windowsZones["Romance Standard Time"])
}

func lineStrings(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.String()
	}
	return out
}

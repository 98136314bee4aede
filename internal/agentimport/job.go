package agentimport

import (
	"fmt"
	"regexp"
	"strings"
)

// Job is one Agent job as msdb holds it: a row of sysjobs with its category's
// name, its steps (sysjobsteps, by step_id) and the schedules attached to it
// (sysjobschedules and sysschedules, by name).
type Job struct {
	Name        string
	Description string
	Category    string
	Enabled     bool
	StartStepID int
	NotifyEmail int // notify_level_email: 0 never, 1 on success, 2 on failure, 3 always
	NotifyPage  int // notify_level_page, likewise
	DeleteLevel int // delete_level, likewise: Agent deletes the job then
	Steps       []Step
	Schedules   []Schedule
}

// Step is one row of msdb.dbo.sysjobsteps.
type Step struct {
	ID              int
	Name            string
	Subsystem       string
	Command         string
	Database        string
	DatabaseUser    string
	OutputFile      string
	OnSuccessAction int
	OnSuccessStepID int
	OnFailAction    int
	OnFailStepID    int
	RetryAttempts   int
	RetryInterval   int // minutes
}

// Agent's on_success_action and on_fail_action values.
const (
	actionQuitSuccess = 1
	actionQuitFailure = 2
	actionNextStep    = 3
	actionGoToStep    = 4
)

// MaxSteps is the most steps a ReadPast job has (issue 29).
const MaxSteps = 100

// Options are what a conversion needs beyond the job.
type Options struct {
	TimeZone string // the IANA zone of the Agent's server: its schedules' times are in it
	Target   string // the named target every step runs on; "" is the node's default target
	Today    int    // the server's date, YYYYMMDD: a schedule that ended before it is not imported
}

// Converted is one Agent job after conversion: Doc is nil when the job is
// not imported, and Lines say why, or what to check.
type Converted struct {
	Job   string
	Doc   *Document
	Lines []Line
}

// Convert turns j into the document that creates the same job in ReadPast,
// paused. A job with a step ReadPast cannot run as Agent does (not T-SQL, a
// go-to to no step) is not imported at all, since leaving the step out would
// change what the job does; a schedule cron cannot express is left out and
// reported, and the job imported without it.
func Convert(j Job, o Options) Converted {
	c := Converted{Job: j.Name}
	skipJob := func(format string, args ...any) Converted {
		c.Doc = nil
		c.Lines = append(c.Lines, Line{Job: j.Name, Skipped: true, Text: fmt.Sprintf(format, args...)})
		return c
	}
	switch {
	case len(j.Steps) == 0:
		return skipJob("has no steps, and a ReadPast job needs at least one")
	case len(j.Steps) > MaxSteps:
		return skipJob("has %d steps, and a ReadPast job has at most %d", len(j.Steps), MaxSteps)
	case j.StartStepID != j.Steps[0].ID:
		return skipJob("starts at step %d, not at its first step %d, and a ReadPast job starts at its first: make step %d the first in Agent, then import again",
			j.StartStepID, j.Steps[0].ID, j.StartStepID)
	}
	names := map[int]string{}
	seen := map[string]bool{}
	for _, s := range j.Steps {
		if seen[s.Name] {
			return skipJob("has two steps named %q, and a go-to names its step", s.Name)
		}
		seen[s.Name] = true
		names[s.ID] = s.Name
	}

	doc := &Document{Name: j.Name, Description: j.Description, Category: category(j.Category), Enabled: false, Overlap: "skip",
		Steps: []StepDoc{}, Schedules: []ScheduleDoc{}}
	stepsOK := true
	last := j.Steps[len(j.Steps)-1].ID
	for _, s := range j.Steps {
		sd, lines, ok := convertStep(j.Name, s, names, last, o.Target)
		c.Lines = append(c.Lines, lines...)
		stepsOK = stepsOK && ok
		doc.Steps = append(doc.Steps, sd)
	}
	if stepsOK {
		c.Lines = append(c.Lines, jobNotes(j)...)
	}

	for _, s := range j.Schedules {
		subject := fmt.Sprintf("schedule %q", s.Name)
		crons, reason := s.Crons(o.Today)
		if reason != "" {
			c.Lines = append(c.Lines, Line{Job: j.Name, Subject: subject, Skipped: true, Text: reason})
			continue
		}
		if len(crons) > 1 {
			c.Lines = append(c.Lines, Line{Job: j.Name, Subject: subject, Text: fmt.Sprintf(
				"fires at minutes that differ from hour to hour, so it became %d cron schedules (%s) that together fire at Agent's times",
				len(crons), strings.Join(crons, "; "))})
		}
		for _, cr := range crons {
			doc.Schedules = append(doc.Schedules, agentSchedule(cr, o.TimeZone))
		}
	}
	if !stepsOK {
		// The schedules are still reported: the DBA who changes the step
		// in Agent and imports again knows what else to expect.
		return skipJob("a step above cannot be converted, and leaving it out would change what the job does")
	}
	c.Doc = doc
	return c
}

// convertStep converts s; ok is false when it cannot be, and lines say why.
func convertStep(job string, s Step, names map[int]string, last int, target string) (sd StepDoc, lines []Line, ok bool) {
	subject := fmt.Sprintf("step %d %q", s.ID, s.Name)
	skip := func(format string, args ...any) {
		lines = append(lines, Line{Job: job, Subject: subject, Skipped: true, Text: fmt.Sprintf(format, args...)})
	}
	check := func(format string, args ...any) {
		lines = append(lines, Line{Job: job, Subject: subject, Text: fmt.Sprintf(format, args...)})
	}
	ok = true
	if !strings.EqualFold(s.Subsystem, "TSQL") {
		skip("runs in Agent's %s subsystem (%s), not T-SQL: ReadPast steps run T-SQL on a target", s.Subsystem, subsystemWhat(s.Subsystem))
		ok = false
	}
	if strings.TrimSpace(s.Command) == "" {
		skip("has an empty command")
		ok = false
	}
	onSuccess, err := action(s.OnSuccessAction, s.OnSuccessStepID, names)
	if err != "" {
		skip("on success %s", err)
		ok = false
	}
	onFailure, err := action(s.OnFailAction, s.OnFailStepID, names)
	if err != "" {
		skip("on failure %s", err)
		ok = false
	}
	if !ok {
		return sd, lines, false
	}

	sd = StepDoc{Name: s.Name, Body: body(s.Database, s.Command), Target: target,
		RetryAttempts: max(s.RetryAttempts, 0), RetryInterval: fmt.Sprintf("%dm", max(s.RetryInterval, 0)),
		OnSuccess: onSuccess, OnFailure: onFailure}
	if tok := agentToken.FindString(s.Command); tok != "" {
		check("uses Agent's token %s, which only Agent replaces: ReadPast sends it to the server as written, where it is a syntax error; edit the step before enabling the job", tok)
	}
	if s.DatabaseUser != "" {
		check("runs as the database user %s in Agent; in ReadPast it runs as the target's login: add EXECUTE AS USER to the body if it must", quoteName(s.DatabaseUser))
	}
	if s.OutputFile != "" {
		check("writes its output to the file %s in Agent; ReadPast keeps a step's messages in its run's history instead", s.OutputFile)
	}
	if s.ID == last && s.OnFailAction == actionNextStep {
		check("is the last step and goes to the next step on failure: check that the run ends the way Agent's did")
	}
	return sd, lines, true
}

// action maps an Agent step action to the API's; the second result says why
// it cannot be.
func action(a, stepID int, names map[int]string) (string, string) {
	switch a {
	case actionQuitSuccess:
		return "quit_success", ""
	case actionQuitFailure:
		return "quit_failure", ""
	case actionNextStep:
		return "next", ""
	case actionGoToStep:
		if n, ok := names[stepID]; ok {
			return "step:" + n, ""
		}
		return "", fmt.Sprintf("goes to step %d, which the job does not have", stepID)
	}
	return "", fmt.Sprintf("has action %d, which is none of 1 quit with success, 2 quit with failure, 3 next step, 4 go to a step", a)
}

// body is what the step runs: Agent runs the command in database_name, so a
// step with one starts with a batch of its own, USE [db], then the command's
// batches byte for byte, in the same session (a target runs a body's batches
// on one session), so its line numbers in error messages stay Agent's.
func body(database, command string) string {
	if database == "" {
		return command
	}
	return "USE " + quoteName(database) + ";\nGO\n" + command
}

// jobNotes are the lines about j itself that the DBA should read before
// enabling the imported job.
func jobNotes(j Job) []Line {
	var lines []Line
	note := func(format string, args ...any) {
		lines = append(lines, Line{Job: j.Name, Text: fmt.Sprintf(format, args...)})
	}
	when := map[int]string{1: "succeeds", 2: "fails", 3: "completes"}
	if !j.Enabled {
		note("is disabled in Agent; it is imported paused like every job: leave it paused if it should not run")
	}
	if w, ok := when[j.NotifyEmail]; ok {
		note("e-mails an Agent operator when it %s: set up a ReadPast alert for it", w)
	}
	if w, ok := when[j.NotifyPage]; ok {
		note("pages an Agent operator when it %s: set up a ReadPast alert for it", w)
	}
	if w, ok := when[j.DeleteLevel]; ok {
		note("is deleted by Agent when it %s; ReadPast keeps it", w)
	}
	return lines
}

// category is Agent's category name, without Agent's placeholders for none.
func category(name string) string {
	if strings.HasPrefix(name, "[Uncategorized") {
		return ""
	}
	return name
}

// agentToken finds an Agent token in a T-SQL command: $(JOBID), $(ESCAPE_SQUOTE(SRVR)), …
var agentToken = regexp.MustCompile(`\$\((?:ESCAPE_(?:SQUOTE|DQUOTE|RBRACKET|NONE)\()?(?:A-DBN|A-SVR|A-ERR|A-SEV|A-MSG|DATE|INST|JOBID|JOBNAME|MACH|MSSA|OSCMD|SQLDIR|SQLLOGDIR|STEPCT|STEPID|SRVR|TIME|STRTTM|STRTDT|WMI\([^)]*\))\)*`)

// subsystemWhat says what an Agent subsystem runs, for the report.
func subsystemWhat(name string) string {
	switch strings.ToUpper(name) {
	case "CMDEXEC":
		return "an operating-system command"
	case "POWERSHELL":
		return "a PowerShell script"
	case "SSIS", "DTS":
		return "an Integration Services package"
	case "ANALYSISQUERY", "ANALYSISCOMMAND":
		return "an Analysis Services query or command"
	case "ACTIVESCRIPTING":
		return "a VBScript or JScript script"
	case "SNAPSHOT", "LOGREADER", "DISTRIBUTION", "MERGE", "QUEUEREADER":
		return "a replication agent"
	}
	return "not T-SQL"
}

// quoteName brackets an identifier the way QUOTENAME does.
func quoteName(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }

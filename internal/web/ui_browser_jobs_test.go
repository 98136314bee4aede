package web

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The DBA's story of issue 29 in the browser: define a three-step job with a
// failure branch through the form (a go-to to a step that does not exist is
// refused next to its field), see its flow drawn, run it, and watch the run
// follow the failure branch to its end: check fails, notify runs, the run
// ends failed, its strip and the duration chart say so.
// slowStep is a body that takes SQLite a few tenths of a second (a count to
// 300,000; many seconds under the race detector), so a run is seen under way.
const slowStep = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c"

func TestBrowserJobWithFailureBranch(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	dir := screenshots(t)

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs")))
	loc := submit(t, tab, "#new-job")
	require.Equal(t, e.srv.URL+"/jobs/new", loc)
	fill := func(onFailure string) {
		require.NoError(t, chromedp.Do(tab,
			chromedp.SetValue(chromedp.ID("j-name"), "nightly-maint"),
			chromedp.SetValue(chromedp.ID("j-category"), "maintenance"),
			chromedp.SetValue(chromedp.ID("step-0-name"), "check"),
			chromedp.SetValue(chromedp.ID("step-0-body"), "SELECT * FROM no_such_table_here"),
			chromedp.SetValue(chromedp.ID("step-0-on-failure"), onFailure),
			chromedp.SetValue(chromedp.ID("step-1-name"), "rebuild"),
			chromedp.SetValue(chromedp.ID("step-1-body"), "SELECT 2"),
			chromedp.SetValue(chromedp.ID("step-1-on-success"), "quit_success"),
			chromedp.SetValue(chromedp.ID("step-1-on-failure"), "step:notify"),
			chromedp.SetValue(chromedp.ID("step-2-name"), "notify"),
			chromedp.SetValue(chromedp.ID("step-2-body"), slowStep),
			chromedp.SetValue(chromedp.ID("step-2-on-success"), "quit_failure"),
			// Two schedules, as Agent jobs often have (a weekday and a weekend time).
			chromedp.SetValue(chromedp.ID("j-cron-0"), "0 1 * * 1-5"),
			chromedp.SetValue(chromedp.ID("j-zone-0"), "Europe/Paris"),
			chromedp.SetValue(chromedp.ID("j-cron-1"), "30 6 * * 0,6"),
			chromedp.SetValue(chromedp.ID("j-zone-1"), "UTC"),
		))
	}
	// A go-to to a step the job does not have: refused, next to its field.
	fill("step:notfy")
	submit(t, tab, "#save-job")
	require.Contains(t, textOf(tab, "#job-form .field-error"), `goes to step "notfy"`)
	v, err := chromedp.Run(tab, chromedp.Value(chromedp.ID("step-2-name")))
	require.NoError(t, err)
	require.Equal(t, "notify", v, "the form keeps what was typed")

	fill("step:notify")
	loc = submit(t, tab, "#save-job")
	require.Equal(t, e.srv.URL+"/jobs/nightly-maint", loc)
	require.Contains(t, textOf(tab, ".flash"), "Job nightly-maint created with 3 steps")
	// The flow: three boxes, check's failure arrow and rebuild's go to notify.
	require.Equal(t, []string{"1. check", "2. rebuild", "3. notify"}, textsOf(tab, "#flow .step text"))
	arrows := textsOf(tab, "#flow path.arrow-fail title")
	require.Contains(t, arrows, "check failed: go to notify")
	require.Contains(t, arrows, "rebuild failed: go to notify")
	require.Contains(t, textsOf(tab, "#flow path.arrow-ok title"), "check succeeded: next step")
	require.Contains(t, textsOf(tab, "#flow text.end title"), "notify: quit reporting failure")
	scheds := textsOf(tab, ".job-schedules li code")
	require.Equal(t, []string{"0 1 * * 1-5", "30 6 * * 0,6"}, scheds, "both schedules of the form")
	shoot(t, tab, dir, "job-page")

	// Run it, and watch it follow the failure branch: the job's page reloads
	// itself while the run is under way, nobody navigates.
	loc = submit(t, tab, "#run-now")
	require.True(t, strings.HasPrefix(loc, e.srv.URL+"/jobs/nightly-maint"), loc)
	require.Contains(t, textOf(tab, ".flash"), "run 1 started")
	require.Equal(t, "running", textOf(tab, "#run-1 .outcome"), "the run is under way when its job's page first shows")
	require.Eventually(t, func() bool {
		return textOf(tab, "#run-1 .outcome") == "failed"
	}, 3*time.Minute, 200*time.Millisecond, "the job's page follows the run to its end by itself")
	refresh, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('meta[http-equiv=refresh]').length`))
	require.NoError(t, err)
	require.Zero(t, refresh, "the page of a job whose run ended stays still")
	require.Equal(t, []string{"check", "notify"}, textsOf(tab, "#run-1 .strip .cell"))
	cls, err := chromedp.Run(tab, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#run-1 .strip .cell')).map(function(e){return e.className})`))
	require.NoError(t, err)
	require.Contains(t, cls[0], "st-failed")
	require.Contains(t, cls[1], "st-succeeded")
	require.Contains(t, textOf(tab, "#run-1 .reason"), "notify succeeded: quit reporting failure")
	n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('#durations rect.bar.st-failed').length`))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the chart marks the failed run")
	shoot(t, tab, dir, "job-run-failed")

	// The run's own page: its steps in order, with their tasks.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/runs/1")))
	require.Equal(t, "failed", textOf(tab, "#run-state .badge"))
	require.Equal(t, []string{"check", "notify"}, textsOf(tab, "#run-steps td.name"))
	require.Equal(t, []string{"failed", "succeeded"}, textsOf(tab, "#run-steps td.outcome"))
	require.Contains(t, textOf(tab, "#run-steps .err-line"), "no_such_table_here")
	shoot(t, tab, dir, "run-page")

	// Edit: notify now quits with success; the flow drawn follows.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs/nightly-maint")))
	loc = submit(t, tab, "#edit-job")
	require.Equal(t, e.srv.URL+"/jobs/nightly-maint/edit", loc)
	v, err = chromedp.Run(tab, chromedp.Value(chromedp.ID("step-0-on-failure")))
	require.NoError(t, err)
	require.Equal(t, "step:notify", v, "the form holds the job's definition")
	v, err = chromedp.Run(tab, chromedp.Value(chromedp.ID("j-cron-1")))
	require.NoError(t, err)
	require.Equal(t, "30 6 * * 0,6", v, "and its schedules, each in a row")
	_, err = chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('j-cron-0').value = ''`)) // drop the weekday schedule
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab, chromedp.SetValue(chromedp.ID("step-2-on-success"), "quit_success")))
	loc = submit(t, tab, "#save-job")
	require.Equal(t, e.srv.URL+"/jobs/nightly-maint", loc)
	require.Contains(t, textOf(tab, ".flash"), "Job nightly-maint saved with 3 steps")
	require.Contains(t, textsOf(tab, "#flow text.end title"), "notify: quit reporting success")
	require.Equal(t, []string{"30 6 * * 0,6"}, textsOf(tab, ".job-schedules li code"), "the schedule emptied in the form is gone")

	// The jobs page shows its last run.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs")))
	require.Equal(t, "failed", textOf(tab, "#job-nightly-maint .last-run .badge"))
}

package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
	"readpast/internal/schedule"
)

// textsOf reads the text of every element a selector matches.
func textsOf(tab context.Context, sel string) []string {
	out, _ := chromedp.Run(tab, chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%q)).map(function(e){return e.textContent.trim()})`, sel)))
	return out
}

// The DBA's story of issue 14 in the browser: create "every night at 01:00
// Europe/Paris, rebuild indexes, skip if still running" through the form,
// see its next fire times in Paris time and in UTC before and after saving,
// pause and resume it, run it now and follow the link to its task, which
// shows the schedule and runs.
func TestBrowserNightlySchedule(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	dir := screenshots(t)
	const name = "nightly-index-rebuild"
	row := "#schedule-" + name

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/schedules")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond, "the schedules page goes live")
	loc := submit(t, tab, "#new-schedule")
	require.Equal(t, e.srv.URL+"/schedules/new", loc)
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("s-name"), name),
		chromedp.SetValue(chromedp.ID("s-cron"), "0 1 * * *"),
		chromedp.SetValue(chromedp.ID("s-zone"), "Europe/Paris"),
		chromedp.SetValue(chromedp.ID("s-queue"), "maintenance"),
		chromedp.SetValue(chromedp.ID("s-body"), "REINDEX"),
		chromedp.SetValue(chromedp.ID("s-timeout"), "7200"),
		chromedp.SetValue(chromedp.ID("s-overlap"), "skip"),
	))

	// Preview: the next five nights, at 01:00 in Paris and the same instants in UTC.
	submit(t, tab, "#preview-button")
	want, err := schedule.Preview("0 1 * * *", "Europe/Paris", time.Now(), 5)
	require.NoError(t, err)
	var local, utc []string
	for _, at := range want {
		local = append(local, at.Format("Mon 2006-01-02 15:04 MST"))
		utc = append(utc, at.UTC().Format("2006-01-02 15:04")+" UTC")
	}
	require.Equal(t, local, textsOf(tab, "#schedule-preview .local"), "the preview in Paris time")
	require.Equal(t, utc, textsOf(tab, "#schedule-preview .utc"), "and in UTC")
	for _, l := range textsOf(tab, "#schedule-preview .local") {
		require.Contains(t, l, " 01:00 C", "01:00 CET or CEST")
	}
	v, err := chromedp.Run(tab, chromedp.Value(chromedp.ID("s-body")))
	require.NoError(t, err)
	require.Equal(t, "REINDEX", v, "the form keeps what was typed")
	shoot(t, tab, dir, "schedule-form-preview")
	list, err := e.store.Schedules(e.ctx)
	require.NoError(t, err)
	require.Empty(t, list, "a preview stores nothing")

	// Create: the schedules page shows it with the same fire times.
	loc = submit(t, tab, "#save-button")
	require.Equal(t, e.srv.URL+"/schedules#schedule-"+name, loc)
	require.Contains(t, textOf(tab, ".flash"), "Schedule "+name+" created: next fire "+local[0])
	require.Equal(t, local, textsOf(tab, row+" .fire-times .local"))
	require.Equal(t, utc, textsOf(tab, row+" .fire-times .utc"))
	require.Equal(t, "enabled", textOf(tab, row+" td.name .badge"))
	s, err := e.store.GetSchedule(e.ctx, name)
	require.NoError(t, err)
	require.Equal(t, queue.OverlapSkip, s.Overlap)
	require.Equal(t, "REINDEX", s.Task.Body)
	require.Equal(t, "local", s.CreatedBy)
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	shoot(t, tab, dir, "schedules")

	// Pause and resume.
	submit(t, tab, row+" button.pause")
	require.Contains(t, textOf(tab, ".flash"), "paused")
	require.Equal(t, "paused", textOf(tab, row+" td.name .badge"))
	require.Empty(t, textsOf(tab, row+" .fire-times li"), "a paused schedule shows no fire times")
	submit(t, tab, row+" button.resume")
	require.Contains(t, textOf(tab, ".flash"), "resumed: next fire "+local[0])
	require.Equal(t, "enabled", textOf(tab, row+" td.name .badge"))
	require.Equal(t, local, textsOf(tab, row+" .fire-times .local"))

	// Run now, then follow the link to its task.
	submit(t, tab, row+" button.run")
	var id int64
	flash := textOf(tab, ".flash")
	_, err = fmt.Sscanf(flash[strings.Index(flash, "task "):], "task %d enqueued", &id)
	require.NoError(t, err, "the notice names the task: %q", flash)
	require.Equal(t, fmt.Sprintf("task %d", id), textOf(tab, row+" a.last-run"))
	markPage(t, tab)
	require.Eventually(t, func() bool { return textOf(tab, row+" td.last .badge") == "succeeded" }, 30*time.Second, 50*time.Millisecond,
		"the run's outcome shows on the open page (%q)", textOf(tab, row+" td.last .badge"))
	require.True(t, pageMarked(tab), "without a reload")
	loc = submit(t, tab, row+" a.last-run")
	require.Equal(t, fmt.Sprintf("%s/tasks/%d", e.srv.URL, id), loc)
	require.Equal(t, "succeeded", textOf(tab, ".panel-head .badge"))
	props := strings.Join(textsOf(tab, "dl.props div"), "\n")
	require.Contains(t, props, "schedule"+name)
	require.Contains(t, props, "queuemaintenance")
	shoot(t, tab, dir, "schedule-run-task")

	audit := strings.Join(uiAudit(t, e), "\n")
	for _, action := range []string{"create_schedule", "pause_schedule", "resume_schedule", "run_schedule"} {
		require.Contains(t, audit, "local "+action+" schedule "+name)
	}
}

package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/jobs"
)

// Every field of a job reaches its form, so saving the edit form unchanged
// keeps the job as it was: a step's target, fan-out and servers at once,
// timeout and transaction, and a schedule's missed-fire policy. The form
// once had no input for them, and a DBA who saved it to change a step's
// body silently dropped the others' timeouts and targets.
func TestBrowserJobFormKeepsEveryField(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs/new")))
	inputs, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll(
		'#step-0-target, #step-0-timeout, #step-0-transactional, #step-1-targets, #step-1-fanout-limit, #j-misfire-0').length`))
	require.NoError(t, err)
	require.Equal(t, 6, inputs, "the form has an input for every field of a step and of a schedule")
	require.NoError(t, chromedp.Do(tab,
		chromedp.SetValue(chromedp.ID("j-name"), "load-and-check"),
		chromedp.SetValue(chromedp.ID("j-cron-0"), "0 2 * * *"),
		chromedp.SetValue(chromedp.ID("j-zone-0"), "UTC"),
		chromedp.SetValue(chromedp.ID("j-misfire-0"), "skip"),
		chromedp.SetValue(chromedp.ID("step-0-name"), "load"),
		chromedp.SetValue(chromedp.ID("step-0-body"), "UPDATE t SET x = 1"),
		chromedp.SetValue(chromedp.ID("step-0-target"), "store"),
		chromedp.SetValue(chromedp.ID("step-0-timeout"), "10m"),
		chromedp.SetValue(chromedp.ID("step-0-transactional"), "true"),
		chromedp.SetValue(chromedp.ID("step-1-name"), "check"),
		chromedp.SetValue(chromedp.ID("step-1-body"), "SELECT 1"),
		chromedp.SetValue(chromedp.ID("step-1-targets"), "store, default"),
		chromedp.SetValue(chromedp.ID("step-1-fanout-limit"), "1"),
	))
	loc := submit(t, tab, "#save-job")
	require.Equal(t, e.srv.URL+"/jobs/load-and-check", loc, textOf(tab, "#job-form"))

	definition := func() jobs.Definition {
		j, err := e.store.GetJob(e.ctx, "load-and-check")
		require.NoError(t, err)
		d, err := jobs.DefinitionOf(j)
		require.NoError(t, err)
		return d
	}
	created := definition()
	require.Len(t, created.Steps, 2)
	load, check := created.Steps[0], created.Steps[1]
	require.Equal(t, "store", load.Target)
	require.Equal(t, jobs.Duration(10*time.Minute), load.Timeout)
	require.True(t, load.Transactional)
	require.Equal(t, []string{"store", "default"}, check.Targets)
	require.Equal(t, 1, check.FanOutLimit)
	require.Len(t, created.Schedules, 1)
	require.Equal(t, "skip", created.Schedules[0].Misfire)

	// Open the edit form and save it as it comes: nothing changes.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs/load-and-check/edit")))
	shoot(t, tab, screenshots(t), "job-edit-form")
	loc = submit(t, tab, "#save-job")
	require.Equal(t, e.srv.URL+"/jobs/load-and-check", loc, textOf(tab, "#job-form"))
	require.Equal(t, created, definition(), "saving the edit form unchanged keeps every field of the job")

	// A value the form cannot read comes back next to its field.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/jobs/load-and-check/edit")))
	require.NoError(t, chromedp.Do(tab, chromedp.SetValue(chromedp.ID("step-0-timeout"), "ten minutes")))
	submit(t, tab, "#save-job")
	require.Contains(t, textOf(tab, "#job-form .field-error"), "is not a duration")
	require.Equal(t, created, definition(), "a refused form changes nothing")
}

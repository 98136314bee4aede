package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A queue's result rows set in the overview's settings form make its tasks
// keep their first result sets, and the task page shows each as a table:
// escaped, NULL apart from the string 'NULL', the rows past the setting left
// out and said so. The API's task carries the same output.
func TestBrowserResultOutputOnTheTaskPage(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	paused := true
	_, err := e.store.UpdateQueue(e.ctx, "out", queue.QueueUpdate{Paused: &paused, Actor: "test"})
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/"),
		chromedp.SetValue(chromedp.CSS(`#queue-out input[name=result_rows]`), "2")))
	submit(t, tab, "#queue-out form.settings button")
	require.Contains(t, textOf(tab, ".flash"), "result_rows=2")
	require.Equal(t, 2, e.queueNamed("out").ResultRows)

	body := "SELECT '<b>bold</b>' AS html, NULL AS missing, 'NULL' AS word\n" +
		"UNION ALL SELECT 'second', 'x', 'y' UNION ALL SELECT 'third', 'x', 'y';\nSELECT 42 AS answer;"
	id := e.enqueue(queue.NewTask{Queue: "out", Body: body})[0]
	// Resumed after the setting: the node reads both in one read of the
	// settings, so the task runs with it.
	paused = false
	_, err = e.store.UpdateQueue(e.ctx, "out", queue.QueueUpdate{Paused: &paused, Actor: "test"})
	require.NoError(t, err)
	e.waitState(id, queue.StateSucceeded, 30*time.Second)

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", e.srv.URL, id))))
	require.Equal(t, "Attempt 1", textOf(tab, "#result-output .result-attempt h3"))
	cell := func(n int) string {
		return textOf(tab, fmt.Sprintf("#result-output .result-set:nth-of-type(1) table.result tbody tr:nth-child(1) td:nth-child(%d)", n))
	}
	require.Equal(t, "<b>bold</b>", cell(1), "a value is shown as text, escaped, never as markup")
	bold, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('#result-output b').length`))
	require.NoError(t, err)
	require.Zero(t, bold, "no element came from a value")
	nullCell, err := chromedp.Run(tab, chromedp.Evaluate[bool](
		`document.querySelector('#result-output table.result tbody tr td:nth-child(2)').classList.contains('null')`))
	require.NoError(t, err)
	require.True(t, nullCell, "SQL NULL is marked as NULL")
	require.Equal(t, "NULL", cell(3))
	rows, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll('#result-output table.result')[0].tBodies[0].rows.length`))
	require.NoError(t, err)
	require.Equal(t, 2, rows, "two rows kept, as the queue says")
	require.Contains(t, textOf(tab, "#result-output .result-truncated"), "result_rows", "the page says rows were left out")
	shoot(t, tab, screenshots(t), "task-result-output")

	p := e.get(fmt.Sprintf("/api/tasks/%d", id))
	require.Equal(t, http.StatusOK, p.status, p.body)
	var detail struct {
		Results []struct {
			Attempt   int        `json:"attempt"`
			Sets      []struct{} `json:"sets"`
			Truncated *string    `json:"truncated"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.body), &detail))
	require.Len(t, detail.Results, 1)
	require.Equal(t, 1, detail.Results[0].Attempt)
	require.Len(t, detail.Results[0].Sets, 1, "past the limit no further result set is kept")
	require.NotNil(t, detail.Results[0].Truncated)
	require.Contains(t, *detail.Results[0].Truncated, "more result sets", "and the note says one was left out")

	// The log export of the task carries it; the log's pages do not.
	p = e.get(fmt.Sprintf("/api/logs?format=json&task=%d", id))
	require.Equal(t, http.StatusOK, p.status, p.body)
	var exported []struct {
		Attempt int `json:"attempt"`
		Results *struct {
			Attempt int `json:"attempt"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.body), &exported))
	require.Len(t, exported, 1)
	require.NotNil(t, exported[0].Results, "the export of one task has its result output")
	require.Equal(t, 1, exported[0].Results.Attempt)
	p = e.get("/api/logs?queue=out")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, `"results"`, "a page of the log carries no result output")
}

package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// A queue paused elsewhere (the API, another dashboard) turns its open
// overview row's button into Resume, not only its badge; the button then
// resumes it, and a resume elsewhere turns it back into Pause.
func TestBrowserPauseElsewhereFlipsButton(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect})
	e.enqueue(queue.NewTask{Queue: "far", Body: "SELECT 1", Delay: time.Hour})
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	markPage(t, tab)
	button := "#queue-far form.toggle button"
	require.Equal(t, "Pause", textOf(tab, button))

	setPaused := func(p bool) {
		_, err := e.store.UpdateQueue(e.ctx, "far", queue.QueueUpdate{Paused: &p, Actor: "elsewhere"})
		require.NoError(t, err)
	}
	setPaused(true)
	require.Eventually(t, func() bool { return textOf(tab, "#queue-far .badge.st-paused:not(.hidden)") == "paused" },
		10*time.Second, 20*time.Millisecond, "the row shows paused")
	require.Equal(t, "Resume", textOf(tab, button), "the row's button offers to resume the paused queue")
	require.True(t, pageMarked(tab), "without a reload")

	submit(t, tab, button)
	q := e.queueNamed("far")
	require.False(t, q.Paused, "the button resumed the queue")

	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(e.srv.URL+"/")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	setPaused(true)
	require.Eventually(t, func() bool { return textOf(tab, button) == "Resume" }, 10*time.Second, 20*time.Millisecond)
	setPaused(false)
	require.Eventually(t, func() bool { return textOf(tab, button) == "Pause" }, 10*time.Second, 20*time.Millisecond,
		"a resume elsewhere turns the button back into Pause")
}

// queueNamed reads one queue's settings from the store.
func (e *uiEnv) queueNamed(name string) queue.Queue {
	e.t.Helper()
	qs, err := e.store.QueueSettings(e.ctx)
	require.NoError(e.t, err)
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	e.t.Fatalf("no queue %s", name)
	return queue.Queue{}
}

package web

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/queue"
)

// The header's UTC/local toggle shows every time in the browser's zone,
// rows the websocket adds too, and the choice outlives a reload (it is kept
// per browser). In local mode the log page's date range is entered in local
// time and sent as the instant it means.
func TestBrowserTimeZoneToggle(t *testing.T) {
	t.Parallel()
	tab, _ := newBrowser(t)
	e := newUIEnv(t, uiOpts{dialect: browserDialect, node: true})
	tokyo, err := time.LoadLocation("Asia/Tokyo") // +09:00 all year
	require.NoError(t, err)
	first := e.enqueue(queue.NewTask{Queue: "tz", Body: "SELECT 1"})[0]
	e.waitState(first, queue.StateSucceeded, 20*time.Second)

	require.NoError(t, chromedp.Do(tab,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
			return err
		}),
		chromedp.Navigate(e.srv.URL+"/logs")))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	cell := fmt.Sprintf(`tr:has(a[href="/tasks/%d"]) time`, first)
	at := finishedAt(t, tab, cell)
	require.Equal(t, at.UTC().Format("15:04:05"), textOf(tab, cell), "times are UTC by default")
	require.Equal(t, "UTC", textOf(tab, "#tz-toggle"))

	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS("#tz-toggle"))))
	require.Equal(t, "local", textOf(tab, "#tz-toggle"))
	require.Equal(t, tokyoText(at, tokyo), textOf(tab, cell), "the toggle shows the browser's zone")

	require.NoError(t, chromedp.Do(tab, chromedp.Reload()))
	require.Eventually(t, func() bool { return liveOn(tab) }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "local", textOf(tab, "#tz-toggle"), "the choice is kept by the browser")
	require.Equal(t, tokyoText(at, tokyo), textOf(tab, cell))

	second := e.enqueue(queue.NewTask{Queue: "tz", Body: "SELECT 2"})[0]
	e.waitState(second, queue.StateSucceeded, 20*time.Second)
	live := fmt.Sprintf(`tr:has(a[href="/tasks/%d"]) time`, second)
	require.Eventually(t, func() bool { return textOf(tab, live) != "" }, 10*time.Second, 20*time.Millisecond, "the new row arrives live")
	require.Eventually(t, func() bool { return textOf(tab, live) == tokyoText(finishedAt(t, tab, live), tokyo) },
		5*time.Second, 20*time.Millisecond, "a row the websocket adds is shown in local time too: %q", textOf(tab, live))

	// The date range in local time: from an hour before the first attempt, in Tokyo's wall clock.
	from := at.Add(-time.Hour).In(tokyo).Format("2006-01-02T15:04")
	require.NoError(t, chromedp.Do(tab, chromedp.SetValue(chromedp.CSS(`input[name="since"]`), from)))
	loc := submit(t, tab, `form.filters button[type=submit]`)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	since, err := time.Parse(time.RFC3339Nano, u.Query().Get("since"))
	require.NoError(t, err, "the range is sent as an instant: %s", loc)
	want, err := time.ParseInLocation("2006-01-02T15:04", from, tokyo)
	require.NoError(t, err)
	require.True(t, want.Equal(since), "since %s is the Tokyo wall-clock time %s", since, from)
	require.NotEmpty(t, textOf(tab, cell), "the attempt is inside the range")
	val, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector('input[name="since"]').value`))
	require.NoError(t, err)
	require.Equal(t, from, val, "the field shows the range in local time again")

	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS("#tz-toggle"))))
	require.Equal(t, "UTC", textOf(tab, "#tz-toggle"))
	require.Equal(t, at.UTC().Format("15:04:05"), textOf(tab, cell), "and back to UTC")
}

// finishedAt reads the instant a <time> element stands for.
func finishedAt(t *testing.T, tab context.Context, sel string) time.Time {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(
		`(function(){var e=document.querySelector(%q);return e?e.getAttribute('datetime'):""})()`, sel)))
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339, v)
	require.NoError(t, err, "%s has a datetime", sel)
	return at
}

// tokyoText is how the page writes a time of today in Tokyo's zone.
func tokyoText(at time.Time, tokyo *time.Location) string {
	l := at.In(tokyo)
	if l.Format("2006-01-02") != time.Now().In(tokyo).Format("2006-01-02") {
		return l.Format("2006-01-02 15:04")
	}
	return l.Format("15:04:05")
}

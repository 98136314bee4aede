// Package ui is the dashboard: server-rendered templ pages, their forms, and
// the websocket that keeps open pages current (live_*.go). Reads go to the
// store through views (views.go), which the pages and the live hub share;
// changes go through the operations (internal/ops), which the API shares.
package ui

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/alerts"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/sqlscript"
	"readpast/internal/target"
	"readpast/internal/web/auth"
	"readpast/web/static"
	"readpast/web/templates"
)

// Deps is what the dashboard needs.
type Deps struct {
	Store queue.Store
	Ops   *ops.Ops
	Node  Node // this process's worker node; nil: none
	Guard *auth.Guard
	// Version is shown in every page's footer.
	Version string
	// Lease is the nodes' lease: a node silent for longer is shown as gone.
	Lease time.Duration
	// Syntax is the lexical rules of the dialect task bodies run on: how a
	// script is split into a chain's blocks.
	Syntax sqlscript.Syntax
	Logger *slog.Logger
	// Targets are this node's targets (docs/TARGETS.md); nil: none.
	Targets *target.Set
	// Alerts is this node's alerts runner; nil: alerts are not configured.
	Alerts *alerts.Runner
}

// Pages serves the dashboard's pages and forms.
type Pages struct {
	*views
	ops     *ops.Ops
	guard   *auth.Guard
	hub     *liveHub
	version string
	syntax  sqlscript.Syntax
	alerts  *alerts.Runner
}

// Page sizes: one screen of a laptop, a little more for the log.
const (
	tasksPageSize = 50
	logsPageSize  = 100
)

// New returns the dashboard.
func New(d Deps) *Pages {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	v := newViews(d.Store, d.Node, d.Lease, d.Logger)
	v.targets, v.ops = d.Targets, d.Ops
	return &Pages{views: v, ops: d.Ops, guard: d.Guard, hub: newLiveHub(v, defaultLiveOptions()),
		version: d.Version, syntax: d.Syntax, alerts: d.Alerts}
}

// Register adds the pages, their form posts and the live websocket. Reading
// needs the viewer role (view); every change the operator role (operate),
// and passes the CSRF check (forms carry the token).
func (u *Pages) Register(e *echo.Echo, view, operate echo.MiddlewareFunc) {
	e.GET(static.Prefix+":file", serveStatic)
	e.GET("/", u.overview, view)
	e.GET("/tasks", u.tasks, view)
	e.GET("/tasks/new", u.enqueueForm, operate)
	e.POST("/tasks/new", u.enqueue, operate)
	e.GET("/tasks/:id", u.task, view)
	e.POST("/tasks/:id/cancel", u.cancel, operate)
	e.POST("/tasks/:id/retry", u.retry, operate)
	e.POST("/tasks/:id/requeue", u.requeue, operate)
	e.POST("/tasks/:id/delete", u.deleteTask, operate)
	e.GET("/tasks/bulk", u.bulkConfirm, operate)
	e.POST("/tasks/bulk", u.startBulk, operate)
	e.GET("/bulk/:id", u.bulk, view)
	e.GET("/logs", u.logs, view)
	e.GET("/logs/export", u.exportLogs, view)
	e.GET("/nodes", u.nodes, view)
	e.GET("/targets", u.targetsPage, view)
	e.GET("/fanouts/:group", u.fanOutPage, view)
	e.POST("/fanouts/:group/retry", u.retryFanOut, operate)
	e.GET("/groups", u.groups, view)
	e.POST("/groups/:name", u.updateGroup, operate)
	e.GET("/audit", u.audit, view)
	e.GET("/audit/export", u.exportAudit, view)
	e.GET("/alerts", u.alertsPage, view)
	e.POST("/alerts/test", u.sendAlertTest, operate)
	e.GET("/schedules", u.schedules, view)
	e.GET("/schedules/new", u.newScheduleForm, operate)
	e.POST("/schedules/new", u.createSchedule, operate)
	e.GET("/schedules/:name/edit", u.editScheduleForm, operate)
	e.POST("/schedules/:name/edit", u.updateSchedule, operate)
	e.POST("/schedules/:name/run", u.runSchedule, operate)
	e.POST("/schedules/:name/pause", u.pauseSchedule, operate)
	e.POST("/schedules/:name/resume", u.resumeSchedule, operate)
	e.GET("/schedules/:name/delete", u.deleteScheduleForm, operate)
	e.POST("/schedules/:name/delete", u.deleteSchedule, operate)
	e.POST("/queues", u.addQueue, operate)
	e.POST("/queues/:name", u.updateQueue, operate)
	e.POST("/queues/:name/delete", u.deleteQueue, operate)
	e.GET("/ws", u.hub.serve, view)
	u.registerJobs(e, view, operate)
}

// CloseLive says goodbye to every live-update websocket (close code 1001, so
// the pages reconnect) and waits until the goodbyes are written or ctx ends.
func (u *Pages) CloseLive(ctx context.Context) error { return u.hub.shutdown(ctx) }

// page fills the frame every page shares. qs are the queues the handler read
// (for the header's totals); nil reads them.
func (u *Pages) page(c echo.Context, nav, title string, live templates.Live, qs []queue.Queue) templates.Page {
	p := templates.Page{
		Title: title, Nav: nav, Live: live,
		CSSURL: static.URL("app.css"), JSURL: static.URL("live.js"), TimeJSURL: static.URL("time.js"),
		CSRFField: auth.CSRFField, CSRF: u.guard.CSRFToken(c),
		CanOperate: auth.Can(c, auth.Operator), User: auth.Actor(c),
		Version: u.version, Flash: u.takeFlash(c),
	}
	if u.node != nil {
		p.Node = u.node.ID()
	}
	if qs == nil {
		ctx, cancel := ops.Bound(c.Request().Context())
		defer cancel()
		qs, _ = u.store.Queues(ctx) // the totals are a nicety: a page still renders without them
	}
	p.Totals = totals(qs)
	return p
}

// formPage is the frame of a form's page (not live), and the queues' names,
// which the form's queue field suggests.
func (u *Pages) formPage(c echo.Context, nav, title string) (templates.Page, []string, error) {
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	qs, err := u.store.Queues(ctx)
	if err != nil {
		return templates.Page{}, nil, err
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	return u.page(c, nav, title, templates.Live{}, qs), names, nil
}

// totals sums the queues' counts per state for the header.
func totals(qs []queue.Queue) []templates.StateCount {
	out := make([]templates.StateCount, 0, len(queue.States))
	for _, st := range []queue.State{queue.StateRunning, queue.StatePending, queue.StateFailed} {
		var n int64
		for _, q := range qs {
			n += q.Counts[st]
		}
		out = append(out, templates.StateCount{State: string(st), Count: n, Key: totalKey(st)})
	}
	return out
}

const flashCookie = "readpast_flash"

// flash leaves a one-line notice for the page the browser is redirected to.
func (u *Pages) flash(c echo.Context, msg string) {
	c.SetCookie(auth.Cookie(c, flashCookie, url.QueryEscape(msg), time.Now().Add(time.Minute)))
}

// takeFlash reads and clears the notice.
func (u *Pages) takeFlash(c echo.Context) string {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	gone := auth.Cookie(c, flashCookie, "", time.Unix(0, 0))
	gone.MaxAge = -1
	c.SetCookie(gone)
	msg, err := url.QueryUnescape(ck.Value)
	if err != nil || len(msg) > 300 {
		return ""
	}
	return msg
}

// redirectBack answers a form post: 303 to the page the form named, else fallback.
func (u *Pages) redirectBack(c echo.Context, fallback, msg string) error {
	if msg != "" {
		u.flash(c, msg)
	}
	return c.Redirect(http.StatusSeeOther, safeReturn(c.FormValue("return"), fallback))
}

// ErrorPage renders an error as the dashboard's HTML error page.
func (u *Pages) ErrorPage(c echo.Context, status int, msg string) error {
	p := templates.Page{Title: http.StatusText(status), CSSURL: static.URL("app.css"), JSURL: static.URL("live.js"), TimeJSURL: static.URL("time.js"),
		Version: u.version, User: auth.Actor(c)}
	return render(c, status, templates.ErrorPage(p, status, msg))
}

// serveStatic serves an embedded asset by its content-hashed name, cacheable for a year.
func serveStatic(c echo.Context) error {
	a, ok := static.Lookup(c.Param("file"))
	if !ok {
		return echo.NewHTTPError(http.StatusNotFound, "no such asset: it may be from an older version; reload the page")
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", a.ETag)
	if c.Request().Header.Get("If-None-Match") == a.ETag {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, a.ContentType, a.Content)
}

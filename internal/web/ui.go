package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/web/static"
	"readpast/web/templates"
)

// ui holds what the dashboard pages and the live hub share.
type ui struct {
	s          *Server
	store      Store
	node       Node
	log        *slog.Logger
	goneAfter  time.Duration
	throughput *throughput
	hub        *liveHub
	now        func() time.Time
}

// Page sizes: one screen of a laptop, a little more for the log.
const (
	tasksPageSize = 50
	logsPageSize  = 100
	storeTimeout  = 10 * time.Second // a page's store reads
)

// registerUI adds the dashboard pages, their form posts and the live websocket.
// Reading needs the viewer role; every change needs the operator role and
// passes the CSRF check (forms carry the token).
func registerUI(s *Server) error {
	u := newUI(s)
	s.pageError = u.errorPage
	s.live = u.hub
	e := s.echo
	view := s.requireRole(roleViewer)
	operate := s.requireRole(roleOperator)

	e.GET(static.Prefix+":file", serveStatic)
	e.GET("/", u.overview, view)
	e.GET("/tasks", u.tasks, view)
	e.GET("/tasks/new", u.enqueueForm, operate)
	e.POST("/tasks/new", u.enqueue, operate)
	e.GET("/tasks/:id", u.task, view)
	e.POST("/tasks/:id/cancel", u.cancel, operate)
	e.POST("/tasks/:id/retry", u.retry, operate)
	e.GET("/logs", u.logs, view)
	e.GET("/logs/export", u.exportLogs, view)
	e.GET("/nodes", u.nodes, view)
	e.POST("/queues", u.addQueue, operate)
	e.POST("/queues/:name", u.updateQueue, operate)
	e.GET("/ws", u.live, view)
	return nil
}

func newUI(s *Server) *ui {
	gone := s.d.Lease
	if gone <= 0 {
		gone = 30 * time.Second
	}
	u := &ui{s: s, store: s.d.Store, node: s.d.Node, log: s.log, goneAfter: gone, now: time.Now}
	u.throughput = newThroughput(s.d.Store)
	u.hub = newLiveHub(u, defaultLiveOptions())
	return u
}

// wake tells this node's idle workers of the queue to claim now.
func (u *ui) wake(queueName string) {
	if u.node != nil {
		u.node.Wake(queueName)
	}
}

// cancelHere stops the task's statement at once if it runs on this node.
func (u *ui) cancelHere(id int64) {
	if u.node != nil {
		u.node.CancelTask(id)
	}
}

// storeContext bounds a page's store reads.
func storeContext(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), storeTimeout)
}

// page fills the frame every page shares. qs are the queues the handler read
// (for the header's totals); nil reads them.
func (u *ui) page(c echo.Context, nav, title string, live templates.Live, qs []queue.Queue) templates.Page {
	p := templates.Page{
		Title: title, Nav: nav, Live: live,
		CSSURL: static.URL("app.css"), JSURL: static.URL("live.js"),
		CSRFField: csrfField, CSRF: u.s.csrfToken(c),
		CanOperate: u.s.can(c, roleOperator), User: u.s.actor(c),
		Version: u.s.d.Version, Flash: u.takeFlash(c),
	}
	if u.node != nil {
		p.Node = u.node.ID()
	}
	if qs == nil {
		ctx, cancel := storeContext(c)
		defer cancel()
		qs, _ = u.store.Queues(ctx) // the totals are a nicety: a page still renders without them
	}
	p.Totals = totals(qs)
	return p
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
func (u *ui) flash(c echo.Context, msg string) {
	c.SetCookie(u.s.cookie(c, flashCookie, url.QueryEscape(msg), time.Now().Add(time.Minute)))
}

// takeFlash reads and clears the notice.
func (u *ui) takeFlash(c echo.Context) string {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	gone := u.s.cookie(c, flashCookie, "", time.Unix(0, 0))
	gone.MaxAge = -1
	c.SetCookie(gone)
	msg, err := url.QueryUnescape(ck.Value)
	if err != nil || len(msg) > 300 {
		return ""
	}
	return msg
}

// redirectBack answers a form post: 303 to the page the form named, else fallback.
func (u *ui) redirectBack(c echo.Context, fallback, msg string) error {
	if msg != "" {
		u.flash(c, msg)
	}
	return c.Redirect(http.StatusSeeOther, safeReturn(c.FormValue("return"), fallback))
}

// errorPage renders an error for a browser page request (Server.pageError).
func (u *ui) errorPage(c echo.Context, status int, msg string) error {
	p := templates.Page{Title: http.StatusText(status), CSSURL: static.URL("app.css"), JSURL: static.URL("live.js"),
		Version: u.s.d.Version, User: u.s.actor(c)}
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

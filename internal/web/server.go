// Package web is the HTTP server of the dashboard and the JSON API (SPEC §7):
// it builds the parts and wires them together, one way only.
//
//	auth/     roles, sessions, CSRF, security headers (docs/SECURITY.md)
//	api/      the JSON API (docs/API.md)
//	ui/       the templ pages, their forms and the live websocket
//	request/  what the API and the pages read from a request alike
//	../ops    the operations both the API and the pages perform
//
// This package adds the middleware order, the error answer (JSON for the API,
// the HTML error page for the pages), the probes and /metrics.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"readpast/internal/alerts"
	"readpast/internal/dialect"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/sqlscript"
	"readpast/internal/target"
	"readpast/internal/web/api"
	"readpast/internal/web/auth"
	"readpast/internal/web/ui"
	"readpast/internal/workers"
)

// Node is this process's worker node, as the web layer steers and shows it.
type Node interface {
	ID() string
	// Wake makes an idle worker of the queue claim at once (after an enqueue).
	Wake(queue string)
	// CancelTask stops the task if it runs here; the cancel is already in the store.
	CancelTask(id int64) bool
	Snapshot() workers.NodeInfo
}

// Deps is what New needs.
type Deps struct {
	Store queue.Store
	Node  Node // nil: no workers in this process
	// Scheduler is this process's scheduler, woken after a schedule is
	// created, changed, resumed or run here; nil: none in this process.
	Scheduler ops.Scheduler
	Logger    *slog.Logger
	Version   string
	// OperatorToken and ViewerToken are the role secrets. With neither set the
	// dashboard is in local mode: it only ever listens on loopback (the binary
	// refuses otherwise) and every request acts as the operator "local".
	OperatorToken string
	ViewerToken   string
	// Lease is the nodes' lease: a node silent for longer is shown as gone.
	Lease time.Duration
	// MaxBodyBytes is the task body limit the store enforces; 0 means
	// queue.DefaultMaxBodyBytes. It sizes MaxRequestBytes.
	MaxBodyBytes int
	// MaxRequestBytes limits a JSON request body (413 above it); 0 means
	// max(8 MiB, 2×MaxBodyBytes + 1 MiB).
	MaxRequestBytes int64
	// Metrics is the Prometheus observer the node's workers feed (pass the same
	// value as workers.Config.Observer); nil: New makes one that only has the
	// gauges read at scrape time.
	Metrics *Metrics
	// SessionTTL is how long a browser login lasts; 0 means 12 hours.
	SessionTTL time.Duration
	// TargetDialect is the dialect task bodies run on; "" means the store's. It decides how a script is
	// split into a chain's blocks.
	TargetDialect dialect.Dialect
	// Targets are this node's targets (docs/TARGETS.md): the targets page
	// reads their sessions' activity; nil: none.
	Targets *target.Set
	// Alerts is this node's alerts runner (the Alerts page, /api/alerts);
	// nil: alerts are not configured.
	Alerts *alerts.Runner
}

// Server is the dashboard and API; it is an http.Handler.
type Server struct {
	echo  *echo.Echo
	log   *slog.Logger
	guard *auth.Guard
	pages *ui.Pages
	ops   *ops.Ops
	owner string // who runs bulk operations here: the node, or this process
}

// New builds the server and its routes.
func New(d Deps) (*Server, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	guard, err := auth.New(auth.Config{OperatorToken: d.OperatorToken, ViewerToken: d.ViewerToken,
		SessionTTL: d.SessionTTL, Logger: d.Logger})
	if err != nil {
		return nil, err
	}
	nodeID := ""
	if d.Node != nil {
		nodeID = d.Node.ID()
	}
	operations := ops.New(ops.Deps{Store: d.Store, Node: d.Node, Scheduler: d.Scheduler, MaxBodyBytes: d.MaxBodyBytes, Lease: d.Lease})
	bodies := d.TargetDialect
	if bodies == "" {
		bodies = d.Store.Dialect()
	}
	owner := nodeID
	if owner == "" {
		host, _ := os.Hostname()
		owner = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	s := &Server{echo: echo.New(), log: d.Logger, guard: guard, ops: operations, owner: owner,
		pages: ui.New(ui.Deps{Store: d.Store, Ops: operations, Node: d.Node, Guard: guard, Version: d.Version,
			Lease: d.Lease, Syntax: sqlscript.SyntaxOf(bodies), Logger: d.Logger, Targets: d.Targets, Alerts: d.Alerts})}
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(auth.SecurityHeaders, middleware.Recover(), guard.LocalHostOnly, guard.Authenticate,
		auth.LimitForms(api.RequestLimit(d.MaxBodyBytes, d.MaxRequestBytes)), guard.CheckCSRF)

	view, operate := guard.RequireRole(auth.Viewer), guard.RequireRole(auth.Operator)
	registerHealth(e, d.Store)
	api.New(api.Deps{Store: d.Store, Ops: operations, NodeID: nodeID, Lease: d.Lease, MaxBodyBytes: d.MaxBodyBytes,
		MaxRequestBytes: d.MaxRequestBytes, Logger: d.Logger, Alerts: d.Alerts}).Register(e, view, operate)
	metrics, err := newMetricsHandler(d)
	if err != nil {
		return nil, err
	}
	e.GET("/metrics", metrics, view)
	guard.Register(e)
	s.pages.Register(e, view, operate)
	return s, nil
}

// RunBulks runs the bulk operations the API and the pages request (and
// those any node left unfinished) until ctx ends (ops.RunBulks).
func (s *Server) RunBulks(ctx context.Context) { s.ops.RunBulks(ctx, s.owner, s.log) }

// CloseLive says goodbye to every live-update websocket (close code 1001, so
// the pages reconnect) and waits until the goodbyes are written or ctx ends.
// Call it after http.Server.Shutdown, which does not track websockets.
func (s *Server) CloseLive(ctx context.Context) error { return s.pages.CloseLive(ctx) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

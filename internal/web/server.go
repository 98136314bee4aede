// Package web serves the dashboard and the JSON API over echo (SPEC §7).
//
// Files: server.go wires everything; health.go the probes; api_*.go the JSON
// API; auth*.go roles, sessions and CSRF; security.go headers; metrics.go
// Prometheus; ui_*.go the templ pages; live*.go the websocket hub.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/sqlscript"
	"readpast/internal/workers"
)

// Store is what the web layer reads and changes in the queue store.
type Store = queue.Store

// Node is this process's worker node, as the web layer steers it.
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
	Store   Store
	Node    Node
	Logger  *slog.Logger
	Version string
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
	// TargetDialect is the dialect task bodies run on ("sqlserver",
	// "postgres", "sqlite"); "" means the store's. It decides how a script is
	// split into a chain's blocks.
	TargetDialect string
}

// Server is the dashboard and API; it is an http.Handler.
type Server struct {
	d       Deps
	log     *slog.Logger
	echo    *echo.Echo
	auth    *authState // roles, sessions and CSRF keys (auth.go)
	metrics *Metrics   // Prometheus collectors (metrics.go)
	// pageError, when set (by the pages), renders an error for a browser page
	// request as HTML; API errors are always JSON (errors.go).
	pageError func(c echo.Context, status int, msg string) error
	live      *liveHub // the dashboard's websocket hub (live_hub.go)
}

// New builds the server and its routes.
func New(d Deps) (*Server, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{d: d, log: d.Logger, echo: echo.New()}
	s.echo.HideBanner, s.echo.HidePort = true, true
	registerHealth(s.echo, d.Store)
	if err := registerAPI(s); err != nil {
		return nil, err
	}
	if err := registerUI(s); err != nil {
		return nil, err
	}
	return s, nil
}

// CloseLive says goodbye to every live-update websocket (close code 1001, so
// the pages reconnect) and waits until the goodbyes are written or ctx ends.
// Call it after http.Server.Shutdown, which does not track websockets.
func (s *Server) CloseLive(ctx context.Context) error {
	if s.live == nil {
		return nil
	}
	return s.live.shutdown(ctx)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// bodySyntax is the lexical rules of the dialect task bodies run on.
func (s *Server) bodySyntax() sqlscript.Syntax {
	if s.d.TargetDialect != "" {
		return sqlscript.SyntaxOf(s.d.TargetDialect)
	}
	return sqlscript.SyntaxOf(s.d.Store.Dialect())
}

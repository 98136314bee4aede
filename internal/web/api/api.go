// Package api is the JSON API under /api/ (docs/API.md): one file per
// resource. Changes go through the operations (internal/ops), which the pages
// share; reads go to the store, bounded by ops.Bound.
package api

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/alerts"
	"readpast/internal/ops"
	"readpast/internal/queue"
	"readpast/internal/web/auth"
)

// Deps is what the API needs.
type Deps struct {
	Store queue.Store
	Ops   *ops.Ops
	// NodeID is this process's node, marked "self" in GET /api/nodes; "" for none.
	NodeID string
	// Lease is the nodes' lease: a node silent for longer is listed as gone.
	Lease time.Duration
	// MaxBodyBytes is the task body limit the store enforces; 0 means
	// queue.DefaultMaxBodyBytes. It sizes MaxRequestBytes.
	MaxBodyBytes int
	// MaxRequestBytes limits a JSON request body (413 above it); 0 means
	// max(8 MiB, 2×MaxBodyBytes + 1 MiB).
	MaxRequestBytes int64
	Logger          *slog.Logger
	// Alerts is this node's alerts runner; nil: alerts are not configured.
	Alerts *alerts.Runner
}

// Handler serves the API.
type Handler struct {
	d   Deps
	log *slog.Logger
}

// New returns the API's handler.
func New(d Deps) *Handler {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Lease <= 0 {
		d.Lease = 30 * time.Second
	}
	return &Handler{d: d, log: d.Logger}
}

// Register adds the API's routes to e; view and operate are the role checks
// of reads and changes.
func (h *Handler) Register(e *echo.Echo, view, operate echo.MiddlewareFunc) {
	// NoStore goes on each route: middleware on the group itself would add
	// catch-all routes that turn 405 into 404.
	g := e.Group("/api")
	g.POST("/tasks", h.createTask, auth.NoStore, operate)
	g.POST("/tasks/batch", h.createBatch, auth.NoStore, operate)
	g.GET("/tasks", h.listTasks, auth.NoStore, view)
	g.GET("/tasks/count", h.countTasks, auth.NoStore, view)
	g.POST("/tasks/cancel", h.bulkTasks(queue.BulkCancel), auth.NoStore, operate)
	g.POST("/tasks/retry", h.bulkTasks(queue.BulkRetry), auth.NoStore, operate)
	g.POST("/tasks/delete", h.bulkTasks(queue.BulkDelete), auth.NoStore, operate)
	g.GET("/bulk", h.listBulk, auth.NoStore, view)
	g.GET("/bulk/:id", h.getBulk, auth.NoStore, view)
	g.GET("/tasks/:id", h.getTask, auth.NoStore, view)
	g.POST("/tasks/:id/cancel", h.cancelTask, auth.NoStore, operate)
	g.POST("/tasks/:id/retry", h.retryTask, auth.NoStore, operate)
	g.POST("/tasks/:id/requeue", h.requeueTask, auth.NoStore, operate)
	g.DELETE("/tasks/:id", h.deleteTask, auth.NoStore, operate)
	g.GET("/logs", h.listLogs, auth.NoStore, view)
	g.GET("/queues", h.listQueues, auth.NoStore, view)
	g.POST("/queues", h.createQueue, auth.NoStore, operate)
	g.PATCH("/queues/:name", h.updateQueue, auth.NoStore, operate)
	g.DELETE("/queues/:name", h.deleteQueue, auth.NoStore, operate)
	g.GET("/groups", h.listGroups, auth.NoStore, view)
	g.PUT("/groups/:name", h.setGroup, auth.NoStore, operate)
	g.GET("/nodes", h.listNodes, auth.NoStore, view)
	g.GET("/targets", h.listTargets, auth.NoStore, view)
	g.GET("/fanouts/:group", h.getFanOut, auth.NoStore, view)
	g.POST("/fanouts/:group/retry", h.retryFanOut, auth.NoStore, operate)
	g.GET("/audit", h.listAudit, auth.NoStore, view)
	g.GET("/schedules", h.listSchedules, auth.NoStore, view)
	g.POST("/schedules", h.createSchedule, auth.NoStore, operate)
	g.GET("/schedules/:name", h.getSchedule, auth.NoStore, view)
	g.PATCH("/schedules/:name", h.updateSchedule, auth.NoStore, operate)
	g.DELETE("/schedules/:name", h.deleteSchedule, auth.NoStore, operate)
	g.POST("/schedules/:name/run", h.runSchedule, auth.NoStore, operate)
	h.registerJobs(g, view, operate)
	g.GET("/alerts", h.getAlerts, auth.NoStore, view)
	g.GET("/alerts/deliveries", h.listAlertDeliveries, auth.NoStore, view)
	g.POST("/alerts/test", h.sendAlertTest, auth.NoStore, operate)
}

package web

import (
	"github.com/labstack/echo/v4/middleware"
)

// registerAPI installs the middleware every route gets (security headers,
// DNS-rebinding guard, authentication, CSRF) and the JSON API, /metrics and
// the sign-in routes. docs/API.md and docs/SECURITY.md describe them.
func registerAPI(s *Server) error {
	a, err := newAuthState(s.d)
	if err != nil {
		return err
	}
	s.auth = a
	s.metrics = s.d.Metrics
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	e := s.echo
	e.HTTPErrorHandler = s.handleError
	e.Use(securityHeaders, middleware.Recover(), s.localHostOnly, s.authenticate, s.checkCSRF)

	// noStore goes on each route: middleware on the group itself would add
	// catch-all routes that turn 405 into 404.
	view, op := s.requireRole(roleViewer), s.requireRole(roleOperator)
	api := e.Group("/api")
	api.POST("/tasks", s.createTask, noStore, op)
	api.POST("/tasks/batch", s.createBatch, noStore, op)
	api.GET("/tasks", s.listTasks, noStore, view)
	api.GET("/tasks/:id", s.getTask, noStore, view)
	api.POST("/tasks/:id/cancel", s.cancelTask, noStore, op)
	api.POST("/tasks/:id/retry", s.retryTask, noStore, op)
	api.GET("/logs", s.listLogs, noStore, view)
	api.GET("/queues", s.listQueues, noStore, view)
	api.PATCH("/queues/:name", s.updateQueue, noStore, op)
	api.GET("/groups", s.listGroups, noStore, view)
	api.PUT("/groups/:name", s.setGroup, noStore, op)
	api.GET("/nodes", s.listNodes, noStore, view)

	metrics, err := s.registerMetrics()
	if err != nil {
		return err
	}
	e.GET("/metrics", metrics, view)

	e.GET("/login", s.loginPage, noStore)
	e.POST("/login", s.login, noStore)
	e.POST("/logout", s.logout)
	return nil
}

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/api"
	"readpast/internal/web/request"
)

// classify maps an error to its HTTP status and message (docs/API.md, errors);
// c is the request, whose route names what was not found.
func classify(c echo.Context, err error) (status int, body api.ErrorBody) {
	var (
		he  *echo.HTTPError
		ve  *queue.ValidationError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ve):
		return http.StatusBadRequest, api.ErrorBody{Error: ve.Error(), Field: ve.Field}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, api.ErrorBody{Error: fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)}
	case errors.Is(err, queue.ErrNotFound):
		if msg, ok := notFoundText(c); ok {
			return http.StatusNotFound, api.ErrorBody{Error: msg}
		}
		return http.StatusNotFound, api.ErrorBody{Error: plainText(err)}
	case errors.Is(err, queue.ErrInvalidState), errors.Is(err, queue.ErrLeaseLost), errors.Is(err, queue.ErrExists):
		return http.StatusConflict, api.ErrorBody{Error: plainText(err)}
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, api.ErrorBody{Error: "the store did not answer in time: " + err.Error()}
	case errors.As(err, &he):
		msg := fmt.Sprint(he.Message)
		switch he.Code {
		case http.StatusNotFound:
			if msg == http.StatusText(http.StatusNotFound) {
				msg = "not found: no such page or endpoint"
			}
		case http.StatusMethodNotAllowed:
			msg = "method not allowed here"
		}
		return he.Code, api.ErrorBody{Error: msg}
	}
	return http.StatusInternalServerError, api.ErrorBody{Error: "internal error: " + plainText(err)}
}

// handleError is echo's HTTPErrorHandler. A page request gets the dashboard's
// HTML error page, whatever it accepts, as the page itself would have been
// HTML (a database outage must not turn a page into raw JSON); the API,
// /metrics and the probes get JSON {"error": ...} (api.ErrorBody).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.log.Warn("error after the response started", "path", c.Request().URL.Path, "err", err)
		return
	}
	status, body := classify(c, err)
	if status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else if request.IsPage(c.Request()) {
		err = s.pages.ErrorPage(c, status, body.Error)
	} else {
		err = api.WriteJSON(c, status, body)
	}
	if err != nil {
		s.log.Warn("writing an error response", "err", err)
	}
}

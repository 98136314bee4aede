package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// errorBody is every error answer of the API: {"error": "...", "field": "..."}.
type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"` // the input field at fault, when one is
}

// classify maps an error to its HTTP status and message (docs/API.md, errors).
func classify(err error) (status int, body errorBody) {
	var (
		he  *echo.HTTPError
		ve  *queue.ValidationError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ve):
		return http.StatusBadRequest, errorBody{Error: ve.Error(), Field: ve.Field}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, errorBody{Error: fmt.Sprintf("request body is over the limit of %d bytes", mbe.Limit)}
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound, errorBody{Error: err.Error()}
	case errors.Is(err, queue.ErrInvalidState), errors.Is(err, queue.ErrLeaseLost):
		return http.StatusConflict, errorBody{Error: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, errorBody{Error: "the store did not answer in time: " + err.Error()}
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
		return he.Code, errorBody{Error: msg}
	}
	return http.StatusInternalServerError, errorBody{Error: "internal error: " + err.Error()}
}

// handleError is echo's HTTPErrorHandler: JSON {"error": ...} for the API and
// every non-page request; for a browser page, pageError renders it when set
// (the dashboard's HTML error page), else plain text.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.log.Warn("error after the response started", "path", c.Request().URL.Path, "err", err)
		return
	}
	status, body := classify(err)
	if status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else if s.pageError != nil && wantsHTML(c) {
		err = s.pageError(c, status, body.Error)
	} else if wantsHTML(c) {
		err = c.String(status, body.Error)
	} else {
		err = writeJSON(c, status, body)
	}
	if err != nil {
		s.log.Warn("writing an error response", "err", err)
	}
}

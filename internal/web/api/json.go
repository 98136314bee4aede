package api

import (
	"encoding/json"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// WriteJSON answers with v as JSON. HTML-significant characters (<, >, &) are
// escaped as \u003c and so on, so a task body can never become markup.
func WriteJSON(c echo.Context, status int, v any) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(true)
	return enc.Encode(v)
}

// requestLimit is the largest JSON request body accepted.
func (h *Handler) requestLimit() int64 { return RequestLimit(h.d.MaxBodyBytes, h.d.MaxRequestBytes) }

// RequestLimit is the largest request body accepted, JSON or form: maxRequest
// when set, else max(8 MiB, 2 × the task body limit + 1 MiB), room for a body
// of the limit with every character escaped.
func RequestLimit(maxBody int, maxRequest int64) int64 {
	if maxRequest > 0 {
		return maxRequest
	}
	body := int64(maxBody)
	if body <= 0 {
		body = queue.DefaultMaxBodyBytes
	}
	return max(8<<20, 2*body+1<<20)
}

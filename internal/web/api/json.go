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
func (h *Handler) requestLimit() int64 {
	if h.d.MaxRequestBytes > 0 {
		return h.d.MaxRequestBytes
	}
	body := int64(h.d.MaxBodyBytes)
	if body <= 0 {
		body = queue.DefaultMaxBodyBytes
	}
	return max(8<<20, 2*body+1<<20)
}

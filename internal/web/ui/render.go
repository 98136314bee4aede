package ui

import (
	"bytes"
	"context"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// render writes a templ component as the HTML response. The page is rendered
// into a buffer first, so a failing component gives a clean 500, not half a page.
func render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store") // pages carry CSRF tokens and live data
	return c.Blob(status, echo.MIMETextHTMLCharsetUTF8, buf.Bytes())
}

// renderString renders a component to a string: the rows and sections the
// websocket sends.
func renderString(comp templ.Component) (string, error) {
	var buf bytes.Buffer
	err := comp.Render(context.Background(), &buf)
	return buf.String(), err
}

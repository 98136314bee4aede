package auth

import (
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"readpast/internal/web/request"
)

// formMemory is how much of a multipart form is kept in memory (echo's own
// default); the rest goes to temporary files, within the request limit.
const formMemory = 32 << 20

// LimitForms caps a form's body at limit bytes, the API's request limit, and
// reads it before the CSRF check, which reads the token from it: a form over
// the limit is refused 413, saying so. It used to answer 403: net/http stops
// reading a form at 10 MB and drops it all, token included (issue 25), so a
// DBA who pasted a large script was told the page had expired.
//
// API requests are left to the API: a form sent there is refused 415 by
// CheckCSRF, and a JSON body is limited by the API's decoder.
func LimitForms(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return next(c)
			}
			if !isForm(r) || request.IsAPI(r) {
				return next(c)
			}
			// A body read through MaxBytesReader lifts net/http's own 10 MB cap.
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			var err error
			if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
				err = r.ParseMultipartForm(formMemory)
			} else {
				err = r.ParseForm()
			}
			var tooLarge *http.MaxBytesError
			switch {
			case errors.As(err, &tooLarge):
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
					fmt.Sprintf("the form is over the limit of %d bytes: send a smaller body, or raise --max-body", tooLarge.Limit))
			case err != nil:
				return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("the form cannot be read: %v", err))
			}
			return next(c)
		}
	}
}

package api

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// queryParams checks that the query has only the allowed parameters, each at
// most once, so a typo (?stat=failed) is an error rather than no filter.
func queryParams(c echo.Context, allowed ...string) (url.Values, error) {
	q := c.QueryParams()
	for k, vs := range q {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return nil, &queue.ValidationError{Field: k, Reason: "is not a known query parameter; use " + strings.Join(allowed, ", ")}
		}
		if len(vs) > 1 {
			return nil, &queue.ValidationError{Field: k, Reason: "is given more than once"}
		}
	}
	return q, nil
}

// intParam parses an optional whole-number parameter; 0 when absent.
func intParam(q url.Values, name string, min int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return 0, &queue.ValidationError{Field: name, Reason: fmt.Sprintf("%q is not a whole number of at least %d", v, min)}
	}
	return n, nil
}

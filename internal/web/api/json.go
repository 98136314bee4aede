package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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

// decodeJSON reads the request body, strictly, into v: Content-Type must be
// application/json, the body at most requestLimit bytes (else 413), one JSON
// object with no unknown fields and nothing after it. Errors name the field.
func (h *Handler) decodeJSON(c echo.Context, v any) error {
	r := c.Request()
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send the body as JSON with Content-Type: application/json")
	}
	limit := h.requestLimit()
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return &queue.ValidationError{Field: "body", Reason: "has data after the JSON object: send exactly one object"}
	}
	return nil
}

// jsonError turns a decoding error into one that names the field at fault.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return echo.NewHTTPError(http.StatusBadRequest, "the request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return echo.NewHTTPError(http.StatusBadRequest, "malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &syn):
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: ")))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("the body must be a JSON object, not %s", typ.Value))
		}
		return &queue.ValidationError{Field: typ.Field, Reason: fmt.Sprintf("is %s, expected %s", typ.Value, jsonType(typ.Type.String()))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return &queue.ValidationError{Field: name, Reason: "is not a known field (see docs/API.md)"}
	}
	return echo.NewHTTPError(http.StatusBadRequest, "malformed JSON: "+err.Error())
}

// jsonType names a Go type the way a JSON client thinks of it.
func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

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

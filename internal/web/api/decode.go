package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// decodeJSON reads the request body, strictly, into v: Content-Type must be
// application/json, the body at most requestLimit bytes (else 413), and one
// JSON object read one way only, else 400 naming the field at fault. Refused:
// unknown fields, a key given twice (it would be a guess which one counts), a
// key in another case ("BODY"), invalid UTF-8 and lone surrogates (which a
// lenient decoder replaces with U+FFFD, so what is stored would not be what
// was sent), and anything after the object.
//
// The decoder is go-json-experiment/json (encoding/json/v2), whose defaults
// are exactly these rules; encoding/json accepts all of the above.
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
	dec := jsontext.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, limit))
	if k := dec.PeekKind(); k != '{' && k != 0 {
		return echo.NewHTTPError(http.StatusBadRequest, notAnObject(k))
	}
	if err := json.UnmarshalDecode(dec, v, json.RejectUnknownMembers(true)); err != nil {
		return jsonError(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
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
		syn *jsontext.SyntacticError
		sem *json.SemanticError
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
		field := fieldPath(syn.JSONPointer)
		msg := syn.Err.Error()
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return &queue.ValidationError{Field: field, Reason: "is given more than once: send each field once"}
		case strings.Contains(msg, "surrogate"):
			return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("holds a lone UTF-16 surrogate at byte %d: send valid Unicode (an escaped pair such as \\ud83d\\ude00 is one character)", syn.ByteOffset)}
		case strings.Contains(msg, "UTF-8"):
			return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is not valid UTF-8 at byte %d: send the text as UTF-8", syn.ByteOffset)}
		case field != "":
			return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is malformed JSON at byte %d: %s", syn.ByteOffset, msg)}
		}
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("malformed JSON at byte %d: %s", syn.ByteOffset, msg))
	case errors.As(err, &sem):
		field := fieldPath(sem.JSONPointer)
		switch {
		case errors.Is(sem.Err, json.ErrUnknownName):
			return &queue.ValidationError{Field: field, Reason: "is not a known field (see docs/API.md)"}
		case field == "":
			return echo.NewHTTPError(http.StatusBadRequest, notAnObject(sem.JSONKind))
		case sem.JSONKind == '0' && sem.Err != nil && strings.Contains(sem.Err.Error(), "range"):
			return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is %s, out of range for %s", sem.JSONValue, goTypeName(sem))}
		case sem.JSONKind == '0':
			return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is %s, expected %s", sem.JSONValue, goTypeName(sem))}
		}
		return &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is %s, expected %s", kindName(sem.JSONKind), goTypeName(sem))}
	}
	return echo.NewHTTPError(http.StatusBadRequest, "malformed JSON: "+err.Error())
}

// fieldPath writes a JSON pointer the way errors name fields: /tasks/3/body
// is tasks[3].body.
func fieldPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// notAnObject refuses a body that is not a JSON object, naming what it is
// when that is JSON at all.
func notAnObject(k jsontext.Kind) string {
	if name := kindName(k); name != "not JSON" {
		return "the body must be a JSON object, not " + name
	}
	return "the body is not JSON: send a JSON object"
}

// kindName names a JSON kind the way a JSON client thinks of it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "not JSON"
}

// goTypeName names the Go type a value was to fill, the way a JSON client
// thinks of it.
func goTypeName(sem *json.SemanticError) string {
	if sem.GoType == nil {
		return "another type"
	}
	t := strings.TrimLeft(sem.GoType.String(), "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "an object"
}

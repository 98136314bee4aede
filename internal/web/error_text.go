package web

import (
	"errors"
	"strings"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
	"readpast/internal/web/request"
)

// The store's errors are written for logs: a dialect prefix ("postgres:"),
// the wrapped sentinel's own prefix ("queue: not found"). What a user reads is
// built here, at the one place every error answer passes: a missing object is
// named from the route ("there is no task 99999"), and the rest loses the
// prefixes so that it reads as the sentence the store wrote.

// sentinels are the store's errors whose text is the package's, not the user's.
var sentinels = []error{queue.ErrNotFound, queue.ErrExists, queue.ErrLeaseLost, queue.ErrInvalidState,
	queue.ErrSchemaTooNew, queue.ErrSchemaPreRelease, queue.ErrSchemaDirty, queue.ErrNotSupported}

// dialectPrefixes start the messages of each dialect package's errors.
var dialectPrefixes = []string{"postgres: ", "sqlserver: ", "sqlite: "}

// notFoundText names what the route looked for: "there is no task 99999".
// ok is false when the route names nothing (the store's text is then used).
func notFoundText(c echo.Context) (string, bool) {
	if c == nil {
		return "", false
	}
	path := c.Path()
	if id := request.PathParam(c, "id"); id != "" && strings.Contains(path, "/tasks/") {
		return "there is no task " + id + ": it never existed, or retention has deleted it since it finished", true
	}
	name := request.PathParam(c, "name")
	if name == "" {
		return "", false
	}
	for _, kind := range []string{"schedule", "queue", "group"} {
		if strings.Contains(path, "/"+kind+"s/") {
			return "there is no " + kind + " " + name, true
		}
	}
	return "", false
}

// plainText is err's message without dialect prefixes and sentinel texts.
func plainText(err error) string {
	msg := err.Error()
	for _, p := range dialectPrefixes {
		msg = strings.ReplaceAll(msg, p, "")
	}
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			continue
		}
		text := s.Error()
		msg = strings.ReplaceAll(msg, ": "+text, "")
		msg = strings.ReplaceAll(msg, text+": ", "")
		// The sentinel alone: its text without the package prefix.
		msg = strings.ReplaceAll(msg, text, strings.TrimPrefix(text, "queue: "))
	}
	return strings.TrimSpace(msg)
}

package web

import (
	"testing"
)

// FuzzEnqueueForm posts any form body to POST /tasks/new (a task, or with
// mode=script a chain): accepted, it leads on (303); refused, the form comes
// back saying why and nothing is written.
func FuzzEnqueueForm(f *testing.F) {
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, form string) {
		for _, e := range envs {
			e.try(t, "POST", "/tasks/new", "application/x-www-form-urlencoded", form)
		}
	})
}

// filterPaths are the lists a filter and a cursor apply to: the API's and the
// pages', and the log's exports.
var filterPaths = []string{"/api/tasks", "/api/logs", "/tasks", "/logs", "/logs/export"}

// FuzzFilters requests the task and log lists, of the API and the pages, with
// any query string: filters, cursors, limits, formats.
func FuzzFilters(f *testing.F) {
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, which uint8, query string) {
		for _, e := range envs {
			e.try(t, "GET", filterPaths[int(which)%len(filterPaths)]+"?"+query, "", "")
		}
	})
}

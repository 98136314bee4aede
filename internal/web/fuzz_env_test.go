package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/web/api"
	"readpast/internal/web/auth"
)

// The fuzz targets (fuzz_*_test.go) drive the real server in process on a
// store of every dialect that can run here (what each can store differs: NUL
// bytes, invalid UTF-8), one request per input and store, and check the input
// contract of docs/API.md whatever the input: never a panic or a 5xx; a
// refusal (4xx) says what is wrong; a refusal writes nothing. Their seed
// corpora are in testdata/fuzz/<target>; `go test ./...` runs them as tests,
// and
//
//	go test ./internal/web -run '^$' -fuzz '^FuzzAPITask$' -fuzztime 60s
//
// looks for more (copy what it finds from $(go env GOCACHE)/fuzz to testdata).

// fuzzEnv is one server for every input of a fuzz target: local mode, no
// workers, so that what is written stays as it was written.
type fuzzEnv struct {
	*apiEnv
	csrf *http.Cookie // a browser's CSRF cookie, for the forms
	tok  string       // the form token bound to it
}

// newFuzzEnvs makes a server per dialect (testenv.Dialects).
func newFuzzEnvs(f *testing.F) []*fuzzEnv {
	var out []*fuzzEnv
	for _, d := range testenv.Dialects() {
		e := &fuzzEnv{apiEnv: newAPIEnv(f, apiOpts{dialect: d}), csrf: &http.Cookie{Name: auth.CSRFCookie, Value: "fuzz-browser-cookie-value"}}
		e.tok = e.csrfFor([]*http.Cookie{e.csrf})
		out = append(out, e)
	}
	return out
}

// serve makes one request in process. A form body is posted with the CSRF
// token a page would carry; a JSON body as the API takes it.
func (e *fuzzEnv) serve(method, target, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://127.0.0.1/", strings.NewReader(body))
	req.URL.Path, req.URL.RawQuery, _ = strings.Cut(target, "?")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if contentType == "application/x-www-form-urlencoded" {
		req.Header.Set(auth.CSRFHeader, e.tok)
		req.AddCookie(e.csrf)
	}
	rec := httptest.NewRecorder()
	e.server.ServeHTTP(rec, req)
	return rec
}

// try makes one request (serve) and holds its answer to the contract: no
// 5xx; a 4xx says what is wrong (in JSON for the API, on the page for a
// page) and wrote nothing.
func (e *fuzzEnv) try(t *testing.T, method, target, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	before := e.written(t)
	rec := e.serve(method, target, contentType, body)
	e.checkAnswer(t, rec, before, string(e.dialect)+": "+target+" "+body)
	return rec
}

func (e *fuzzEnv) checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, before string, input any) {
	t.Helper()
	body := rec.Body.String()
	require.Less(t, rec.Code, 500, "input %q: %s", input, body)
	if rec.Code < 400 {
		return
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		var b api.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &b), "input %q: a refusal is JSON: %s", input, body)
		require.NotEmpty(t, b.Error, "input %q: a refusal says what is wrong: %s", input, body)
	} else {
		require.Regexp(t, `class="(error|field-error)"`, body, "input %q: the page says what is wrong", input)
	}
	require.Equal(t, before, e.written(t), "input %q was refused (%d) but something was written", input, rec.Code)
}

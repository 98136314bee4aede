package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/target"
	"readpast/internal/testenv"
	"readpast/internal/web/api"
	"readpast/internal/workers"
)

// Tokens of the API tests' token mode.
const (
	testOperatorToken = "op-secret-0123456789"
	testViewerToken   = "viewer-secret-0123456789"
)

// apiOpts shapes one API test server.
type apiOpts struct {
	tokens     bool                             // operator and viewer tokens; false: local mode
	node       bool                             // run a real worker node on the store
	maxRequest int64                            // Deps.MaxRequestBytes
	lease      time.Duration                    // the node's lease; default 2s
	dialect    testenv.Dialect                  // the store's
	alerts     func(queue.Store) *alerts.Runner // the node's alerts runner, made on the store
}

// apiEnv is a real server on a fresh store, reached over HTTP.
type apiEnv struct {
	t       testing.TB
	ctx     context.Context
	srv     *httptest.Server
	server  *Server
	store   queue.Store
	dialect testenv.Dialect
	dsn     string
	db      *testenv.Env // the store's database, for what tests read outside the store
	node    *workers.Node
	metrics *Metrics
}

func newAPIEnv(t testing.TB, o apiOpts) *apiEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	require.NotEmpty(t, o.dialect, "name the store's dialect")
	dsn := testenv.NewDSN(t, o.dialect)
	s := testenv.OpenStore(t, dsn, queue.Options{MaxBodyBytes: 4096})
	require.NoError(t, s.Migrate(ctx))
	e := &apiEnv{t: t, ctx: ctx, store: s, dialect: o.dialect, dsn: dsn, metrics: NewMetrics(),
		db: &testenv.Env{Ctx: ctx, Dialect: o.dialect, DSN: dsn, Store: s}}
	d := Deps{Store: e.store, Logger: discardLog, Version: "test", Lease: 2 * time.Second, Metrics: e.metrics,
		MaxBodyBytes: 4096, MaxRequestBytes: o.maxRequest}
	if o.tokens {
		d.OperatorToken, d.ViewerToken = testOperatorToken, testViewerToken
	}
	if o.lease == 0 {
		o.lease = 2 * time.Second
	}
	if o.node {
		e.node = runNode(t, s, dsn, workers.Config{NodeID: "api-test-node", Lease: o.lease, Observer: e.metrics})
		d.Node = e.node
	}
	if o.alerts != nil {
		d.Alerts = o.alerts(s)
	}
	var err error
	e.server, err = New(d)
	require.NoError(t, err)
	e.srv = httptest.NewServer(e.server)
	t.Cleanup(e.srv.Close)
	return e
}

// apiRes is one answer.
type apiRes struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v.
func (r apiRes) json(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

// errorMsg is the {"error": ...} of a refusal.
func (r apiRes) errorMsg(t testing.TB) string {
	t.Helper()
	var b api.ErrorBody
	r.json(t, &b)
	require.NotEmpty(t, b.Error, "a refusal must say why: %s", r.body)
	return b.Error
}

// newRequest builds a request to the test server; a non-empty body is JSON.
func (e *apiEnv) newRequest(method, path, token, body string) *http.Request {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// send makes the request without following redirects.
func (e *apiEnv) send(req *http.Request, jar http.CookieJar) apiRes {
	e.t.Helper()
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return apiRes{status: res.StatusCode, header: res.Header, body: b}
}

// call is one API request with a bearer token ("" for none).
func (e *apiEnv) call(method, path, token, body string) apiRes {
	e.t.Helper()
	return e.send(e.newRequest(method, path, token, body), nil)
}

// enqueue posts one task and returns it.
func (e *apiEnv) enqueue(token, body string) api.Task {
	e.t.Helper()
	r := e.call("POST", "/api/tasks", token, body)
	require.Equal(e.t, http.StatusCreated, r.status, "enqueue: %s", r.body)
	var t api.Task
	r.json(e.t, &t)
	return t
}

// waitState polls the task until it reaches st.
func (e *apiEnv) waitState(id int64, st queue.State, within time.Duration) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		t, err := e.store.Get(e.ctx, id)
		return err == nil && t.State == st
	}, within, 20*time.Millisecond, "task %d did not become %s", id, st)
}

// auditRows reads the audit log through SQL, beside the store: what was written.
func (e *apiEnv) auditRows() []string {
	e.t.Helper()
	rows := testenv.QueryStrings(e.t, e.dialect, e.dsn,
		`SELECT CONCAT(actor, ' ', action, ' ', target, ' ', detail) FROM readpast_audit ORDER BY id`)
	for i := range rows {
		rows[i] = strings.TrimSpace(rows[i])
	}
	return rows
}

// eachDialect runs fn as a parallel subtest on every dialect that can run
// here (testenv.Dialects: SQLite, PostgreSQL, and SQL Server when configured).
func eachDialect(t *testing.T, fn func(t *testing.T, d testenv.Dialect)) {
	t.Helper()
	for _, d := range testenv.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// refused makes a request without credentials and checks its refusal: the
// status, the field it names ("" for none) and what the message says.
func (e *apiEnv) refused(t *testing.T, method, path, body string, status int, field, want string) {
	t.Helper()
	r := e.call(method, path, "", body)
	require.Equal(t, status, r.status, "%s", r.body)
	var b api.ErrorBody
	r.json(t, &b)
	require.Equal(t, field, b.Field, "%s", r.body)
	require.Contains(t, b.Error, want)
}

// audited counts the audit rows of one change, on any dialect.
func (e *apiEnv) audited(t *testing.T, actor, action, target string) int64 {
	t.Helper()
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	return e.db.QueryInt(t, "SELECT count(*) FROM readpast_audit WHERE actor = "+quote(actor)+
		" AND action = "+quote(action)+" AND target = "+quote(target))
}

// auditCount counts every audit row.
func (e *apiEnv) auditCount(t *testing.T) int64 {
	t.Helper()
	return e.db.QueryInt(t, "SELECT count(*) FROM readpast_audit")
}

// keepsEscapesAsSent reports whether a store of dialect d gives back a body
// with line breaks, tabs and quotes as it was sent: not on Babelfish, whose
// OPENJSON keeps them escaped (testenv.BabelfishJSONEscapes).
func keepsEscapesAsSent(t testing.TB, d testenv.Dialect) bool {
	return d != testenv.SQLServer || !testenv.IsBabelfish(t, os.Getenv(testenv.MSSQLDSNEnv))
}

// newJar is a browser's cookie jar.
func newJar(t *testing.T) http.CookieJar {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return jar
}

// nopBody is a request body of s.
func nopBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

var discardLog = slog.New(slog.DiscardHandler)

// runNode runs a real worker node on the store (tasks run on the database at
// dsn) until the test ends. cfg's polls are made quick for tests.
func runNode(t testing.TB, s queue.Store, dsn string, cfg workers.Config) *workers.Node {
	t.Helper()
	tgt, err := target.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { tgt.Close() })
	cfg.Poll, cfg.Grace, cfg.SettingsEvery, cfg.Logger = 50*time.Millisecond, time.Second, 50*time.Millisecond, discardLog
	n, err := workers.New(s, tgt, cfg)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	select {
	case <-n.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the worker node did not start")
	}
	return n
}

package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"readpast/internal/alerts"
	"readpast/internal/queue"
	"readpast/internal/testenv"
	"readpast/internal/web/auth"
	"readpast/internal/workers"
)

// uiOpts shapes one dashboard test server.
type uiOpts struct {
	dialect        testenv.Dialect // the store's
	node           bool            // run a real worker node on the store
	defaultWorkers int
	alerts         func(queue.Store) *alerts.Runner // the node's alerts runner, made on the store
}

// uiEnv is the dashboard on a fresh store in local mode (every request acts
// as the operator "local"), reached over real HTTP.
type uiEnv struct {
	t       *testing.T
	ctx     context.Context
	srv     *httptest.Server
	server  *Server
	store   queue.Store
	dialect testenv.Dialect
	dsn     string
	node    *workers.Node
	jar     http.CookieJar
}

func newUIEnv(t *testing.T, o uiOpts) *uiEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	require.NotEmpty(t, o.dialect, "name the store's dialect")
	dsn := testenv.NewDSN(t, o.dialect)
	s := testenv.OpenStore(t, dsn, queue.Options{})
	require.NoError(t, s.Migrate(ctx))
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	e := &uiEnv{t: t, ctx: ctx, store: s, dialect: o.dialect, dsn: dsn, jar: jar}
	d := Deps{Store: e.store, Logger: discardLog, Version: "test", Lease: 3 * time.Second}
	if o.node {
		var size *int // the node's default unless the test sets one
		if o.defaultWorkers > 0 {
			size = &o.defaultWorkers
		}
		e.node = runNode(t, s, dsn, workers.Config{NodeID: "ui-test-node", Lease: 3 * time.Second,
			DefaultWorkers: size, TargetIsStore: true})
		d.Node = e.node
	}
	if o.alerts != nil {
		d.Alerts = o.alerts(s)
	}
	e.server, err = New(d)
	require.NoError(t, err)
	e.srv = httptest.NewServer(e.server)
	t.Cleanup(e.srv.Close)
	return e
}

// page is one answer of the dashboard.
type page struct {
	status   int
	header   http.Header
	body     string
	location string
}

// get loads a page as a browser would.
func (e *uiEnv) get(path string) page {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, "GET", e.srv.URL+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	return e.do(req)
}

// post submits a form with the page's CSRF token (unless the form sets its own).
func (e *uiEnv) post(path string, form url.Values) page {
	e.t.Helper()
	if _, ok := form[auth.CSRFField]; !ok {
		form.Set(auth.CSRFField, e.csrf())
	}
	req, err := http.NewRequestWithContext(e.ctx, "POST", e.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	return e.do(req)
}

func (e *uiEnv) do(req *http.Request) page {
	e.t.Helper()
	c := &http.Client{Jar: e.jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return page{status: res.StatusCode, header: res.Header, body: string(b), location: res.Header.Get("Location")}
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]*)"`)

// csrf reads the token a page carries (loading the overview sets the cookie).
func (e *uiEnv) csrf() string {
	e.t.Helper()
	p := e.get("/nodes")
	m := csrfMeta.FindStringSubmatch(p.body)
	require.NotNil(e.t, m, "every page carries its CSRF token in a meta tag")
	return m[1]
}

func (e *uiEnv) enqueue(tasks ...queue.NewTask) []int64 {
	e.t.Helper()
	res, err := e.store.Enqueue(e.ctx, tasks)
	require.NoError(e.t, err)
	return queue.IDs(res)
}

func (e *uiEnv) waitState(id int64, st queue.State, within time.Duration) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		t, err := e.store.Get(e.ctx, id)
		return err == nil && t.State == st
	}, within, 20*time.Millisecond, "task %d did not become %s", id, st)
}

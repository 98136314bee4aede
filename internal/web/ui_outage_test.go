package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
	"readpast/internal/testpg"
	"readpast/internal/web/auth"
)

// While the store's database is down, a page answers with the dashboard's
// HTML error page saying what failed, whoever asks (a browser, or curl with no
// Accept header), and the API keeps answering JSON.
func TestPagesDuringAStoreOutage(t *testing.T) {
	t.Parallel()
	t.Run("sqlite store closed", func(t *testing.T) {
		t.Parallel()
		e := newUIEnv(t, uiOpts{dialect: testenv.SQLite})
		token := csrfTokenFor(t, e.srv.URL)
		require.NoError(t, e.store.Close())
		checkOutage(t, e.srv.URL, token, "closed")
	})
	t.Run("postgres server stopped", func(t *testing.T) {
		t.Parallel()
		pg := testpg.Private(t)
		env := testenv.On(t, testenv.Postgres, pg.NewDatabase(t))
		s, err := New(Deps{Store: env.Store, Logger: discardLog})
		require.NoError(t, err)
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		token := csrfTokenFor(t, srv.URL)
		require.NoError(t, pg.Stop())
		checkOutage(t, srv.URL, token, "")
		require.NoError(t, pg.Start(), "the database is dropped after the test")
	})
}

// outageCookie is the CSRF cookie of the outage test's browser.
var outageCookie = &http.Cookie{Name: auth.CSRFCookie, Value: "outage-test-cookie-value"}

// checkOutage requests pages and the API of a server whose store is down; the
// answers must carry want. token is the forms' CSRF token.
func checkOutage(t *testing.T, base, token, want string) {
	t.Helper()
	for _, accept := range []string{"", "*/*", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"} {
		for _, path := range []string{"/", "/tasks", "/tasks/1", "/logs", "/nodes", "/tasks/new", "POST /tasks/new"} {
			method := "GET"
			var body io.Reader
			if m, p, ok := strings.Cut(path, " "); ok {
				method, path = m, p
				body = strings.NewReader(url.Values{"body": {"SELECT 1"}}.Encode())
			}
			req, err := http.NewRequest(method, base+path, body)
			require.NoError(t, err)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			if method == "POST" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set(auth.CSRFHeader, token)
				req.AddCookie(outageCookie)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			require.GreaterOrEqual(t, res.StatusCode, 500, "%s %s (Accept %q): %s", method, path, accept, b)
			require.Equal(t, "text/html; charset=UTF-8", res.Header.Get("Content-Type"), "%s %s (Accept %q) is a page: %s", method, path, accept, b)
			require.Contains(t, string(b), `<p class="error" role="alert">`, "%s %s: the error page", method, path)
			require.Contains(t, string(b), want)
		}
	}
	res, err := http.Get(base + "/api/queues")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.GreaterOrEqual(t, res.StatusCode, 500)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"), "the API answers JSON: %s", b)
}

// csrfTokenFor is the form token a page gives the outage test's browser.
func csrfTokenFor(t *testing.T, base string) string {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/nodes", nil)
	require.NoError(t, err)
	req.AddCookie(outageCookie)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	m := csrfMeta.FindStringSubmatch(string(b))
	require.NotNil(t, m, "the page carries the CSRF token: %s", b)
	return m[1]
}

package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"readpast/internal/testenv"
)

// Browser tests drive the real dashboard in Debian's headless Chromium.
// Without a browser they skip, unless READPAST_REQUIRE_BROWSER=1 (CI), which
// makes a missing browser a failure. READPAST_SCREENSHOTS=<dir> keeps the
// screenshots they take of each page there (else they go to a temp dir).

// browserDialect is the store the browser tests run on: SQLite only, to keep
// CI's time down. What they drive (the pages, forms and live updates) is what
// the HTTP tests check on every dialect; a browser adds the script and the
// layout, which do not depend on the store.
const browserDialect = testenv.SQLite

// chromiumPath finds the browser.
func chromiumPath() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// newBrowser starts a headless Chromium for the test and returns a context
// for its first tab, and a function that opens more tabs.
func newBrowser(t *testing.T) (tab context.Context, newTab func() context.Context) {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("READPAST_REQUIRE_BROWSER") == "1" {
			t.Fatal("READPAST_REQUIRE_BROWSER=1 but no Chromium was found: apt-get install -y chromium")
		}
		t.Skip("no Chromium at /usr/bin/chromium (apt-get install -y chromium); set READPAST_REQUIRE_BROWSER=1 to fail instead")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	require.NoError(t, chromedp.Do(browserCtx), "starting Chromium at %s", path)
	ctx, cancel := context.WithTimeout(browserCtx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx, func() context.Context {
		tab, cancelTab := chromedp.NewContext(browserCtx)
		t.Cleanup(cancelTab)
		tab, cancel := context.WithTimeout(tab, 3*time.Minute)
		t.Cleanup(cancel)
		require.NoError(t, chromedp.Do(tab))
		return tab
	}
}

// screenshots is where a test's page pictures go.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("READPAST_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.TempDir()
}

// shoot saves a PNG of what a laptop screen shows of the page.
func shoot(t *testing.T, tab context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// textOf reads an element's text ("" when it is not there).
func textOf(tab context.Context, sel string) string {
	s, _ := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.textContent.trim():""})()`, sel)))
	return s
}

// tcpProxy forwards a local port to the test server; dropAll cuts every
// connection it carries, as a flaky network or a restarted proxy would.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.dropAll() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *tcpProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

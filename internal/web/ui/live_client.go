package ui

import (
	"net"
	"net/http"
	"time"

	"readpast/internal/web/auth"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// liveClient is one websocket connection: a read pump that only watches for
// pongs and the close, and a write pump that sends what the hub queues and pings.
type liveClient struct {
	hub  *liveHub
	conn *websocket.Conn
	send chan []byte // closed by the hub when it drops the client
	view liveView
	// When the connection was made: after the page it serves was rendered, so
	// its snapshot is read no earlier.
	joined time.Time
	// Owned by the hub: whether the client still needs its snapshot, and what
	// it was last sent (the baseline of its next message).
	fresh      bool
	sentFields *fieldSet
	sentView   *viewState
	// Why the hub closed send: 0 for a client that did not keep up, else the
	// close code to send (set before send is closed).
	bye int
}

// serve upgrades GET /ws?view=<kind>&<the page's filters> to a websocket that
// receives the view's snapshot and then its changes. A browser's Origin must
// be this host.
func (h *liveHub) serve(c echo.Context) error {
	view, err := parseLiveView(c.QueryParams(), auth.Can(c, auth.Operator))
	if err != nil {
		return err
	}
	up := websocket.Upgrader{
		ReadBufferSize: 512, WriteBufferSize: 16 << 10,
		CheckOrigin: auth.CheckOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			http.Error(w, "websocket: "+reason.Error(), status)
		},
	}
	conn, err := up.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader answered already
	}
	if n := h.opts.writeBuffer; n > 0 {
		if tc, ok := conn.NetConn().(*net.TCPConn); ok {
			_ = tc.SetWriteBuffer(n)
		}
	}
	cl := &liveClient{hub: h, conn: conn, send: make(chan []byte, h.opts.sendBuffer), view: view, joined: time.Now()}
	h.pumps.Add(1)
	h.join(cl)
	go func() { defer h.pumps.Done(); cl.writePump() }()
	go cl.readPump()
	return nil
}

// readPump reads until the connection ends (the page sends nothing but pongs
// and the close), then tells the hub.
func (c *liveClient) readPump() {
	defer func() {
		c.hub.leave(c)
		c.conn.Close()
	}()
	c.conn.SetReadLimit(512)
	_ = c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.pongWait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(c.hub.opts.pongWait))
	})
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			return
		}
	}
}

// writePump sends the hub's messages and a ping now and then; a write that
// does not finish within writeWait ends the connection.
func (c *liveClient) writePump() {
	ping := time.NewTicker(c.hub.opts.pingPeriod)
	defer func() {
		ping.Stop()
		c.conn.Close()
	}()
	for {
		select {
		case msg, ok := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(c.hub.opts.writeWait))
			if !ok {
				code, text := websocket.CloseTryAgainLater, "too slow: reconnect"
				if c.bye != 0 {
					code, text = c.bye, "server stopping: reconnect"
				}
				_ = c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, text))
				return
			}
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			_ = c.conn.SetWriteDeadline(time.Now().Add(c.hub.opts.writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

package ui

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// BenchmarkLiveFanOut100 measures one live update reaching 100 browsers: the
// hub diffs the newest fields against what each client was last sent, encodes
// one message per distinct baseline, queues it to each client's write pump, and
// every client has read it off its real websocket (loopback TCP). The store
// reads of a tick are not part of it: they happen once per tick, whatever the
// number of clients (TestLiveHundredClients).
func BenchmarkLiveFanOut100(b *testing.B) {
	const clients = 100
	h := newLiveHub(&views{log: slog.New(slog.DiscardHandler)}, defaultLiveOptions())
	h.clients = map[*liveClient]struct{}{}
	h.views = map[string]*liveViewState{}

	// Two readings of 20 queues' counts that differ in ten of them.
	readings := [2]*fieldSet{{m: map[string]string{}}, {m: map[string]string{}}}
	for q := range 20 {
		for _, st := range []string{"pending", "running", "succeeded", "failed", "cancelled"} {
			key := fmt.Sprintf("count:queue-%02d:%s", q, st)
			readings[0].m[key] = fmt.Sprint(1000 + q)
			readings[1].m[key] = fmt.Sprint(1000 + q)
			if st == "pending" || st == "succeeded" {
				readings[1].m[key] = fmt.Sprint(2000 + q)
			}
		}
	}
	overview := liveView{key: "overview", kind: "overview"}
	state := &viewState{sections: map[string]string{"chart": strings.Repeat("<rect/>", 60)}}
	h.views[overview.key] = &liveViewState{view: overview, state: state}
	h.fields = readings[0]

	connected := make(chan *liveClient, clients)
	up := websocket.Upgrader{ReadBufferSize: 512, WriteBufferSize: 16 << 10}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		cl := &liveClient{hub: h, conn: conn, send: make(chan []byte, h.opts.sendBuffer), view: overview,
			sentFields: readings[0], sentView: state}
		go cl.writePump()
		connected <- cl
	}))
	defer srv.Close()

	received := make(chan struct{}, clients)
	for range clients {
		conn, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		defer conn.Close()
		go func() {
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
				received <- struct{}{}
			}
		}()
		cl := <-connected
		h.clients[cl] = struct{}{}
	}

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.fields = readings[(i+1)%2]
		h.send(true)
		for range clients {
			<-received
		}
	}
	b.StopTimer()
	for c := range h.clients {
		h.drop(c)
	}
}

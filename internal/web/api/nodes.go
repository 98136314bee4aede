package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"readpast/internal/ops"
)

// Node is a registered node as the API returns it.
type Node struct {
	ID          string          `json:"id"`
	Hostname    *string         `json:"hostname"`
	PID         *int            `json:"pid"`
	Version     *string         `json:"version"`
	StartedAt   time.Time       `json:"started_at"`
	HeartbeatAt time.Time       `json:"heartbeat_at"`
	StoppedAt   *time.Time      `json:"stopped_at"`
	Gone        bool            `json:"gone"` // stopped, or silent for longer than a lease
	Self        bool            `json:"self"` // the node serving this request
	Info        json.RawMessage `json:"info"` // its pools and what each worker runs (workers.NodeInfo)
}

// listNodes is GET /api/nodes, newest heartbeat first.
func (h *Handler) listNodes(c echo.Context) error {
	if _, err := queryParams(c); err != nil {
		return err
	}
	ctx, cancel := ops.Bound(c.Request().Context())
	defer cancel()
	ns, err := h.d.Store.Nodes(ctx, h.d.Lease)
	if err != nil {
		return err
	}
	out := make([]Node, len(ns))
	for i, n := range ns {
		info := json.RawMessage(n.Info)
		if !json.Valid(info) {
			info = json.RawMessage(`{}`)
		}
		out[i] = Node{ID: n.ID, Hostname: orNull(n.Hostname), PID: orNull(n.PID), Version: orNull(n.Version), StartedAt: n.StartedAt.UTC(),
			HeartbeatAt: n.HeartbeatAt.UTC(), StoppedAt: optTime(n.StoppedAt), Gone: n.Gone, Self: n.ID == h.d.NodeID, Info: info}
	}
	return WriteJSON(c, http.StatusOK, map[string]any{"nodes": out})
}

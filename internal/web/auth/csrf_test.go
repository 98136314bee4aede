package auth

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The websocket's origin check accepts this host only.
func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	for origin, ok := range map[string]bool{"": true, "http://127.0.0.1:8080": true, "http://evil.example": false,
		"http://127.0.0.1:9999": false, "null": false, "file://": false} {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.Host = "127.0.0.1:8080"
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		require.Equal(t, ok, CheckOrigin(r), "Origin %q", origin)
	}
}

package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Webhook headers (docs/ALERTS.md, "Verifying a webhook").
const (
	HeaderAlertID   = "X-ReadPast-Alert-Id"
	HeaderTimestamp = "X-ReadPast-Timestamp"
	HeaderSignature = "X-ReadPast-Signature"
)

// Sign is the signature of a webhook body sent at ts: "v1=" and the hex
// HMAC-SHA256, keyed by the secret, of the timestamp, a dot and the body.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// errGone says the receiver refuses for good (410 Gone): no more retries.
var errGone = errors.New("the receiver answered 410 Gone")

// payload is the JSON a webhook of format f receives.
func payload(f string, m Message) ([]byte, error) {
	text := m.Text
	if m.State == "recovered" {
		text = "Recovered: " + text
	}
	switch f {
	case "slack":
		return json.Marshal(map[string]any{"text": fmt.Sprintf("*%s*\n%s\n(alert %s)", m.Title, text, m.AlertID)})
	case "teams":
		body := []map[string]any{
			{"type": "TextBlock", "text": m.Title, "weight": "Bolder", "wrap": true},
			{"type": "TextBlock", "text": text, "wrap": true},
			{"type": "TextBlock", "text": "Rule " + m.Rule + ", alert " + m.AlertID, "isSubtle": true, "wrap": true},
		}
		return json.Marshal(map[string]any{"type": "message", "attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type": "AdaptiveCard", "version": "1.4", "body": body},
		}}})
	}
	return json.Marshal(m)
}

// send posts m, signed, to the webhook; a 2xx answer is delivered.
func (w *Webhook) send(ctx context.Context, client *http.Client, m Message) error {
	body, err := payload(w.Format, m)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", w.Name, err)
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ReadPast-Alerts")
	req.Header.Set(HeaderAlertID, m.AlertID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	resp, err := client.Do(req)
	if err != nil {
		// The URL may hold a token (Slack's do): name the webhook, not it.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return fmt.Errorf("webhook %s: %v", w.Name, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusGone:
		return fmt.Errorf("webhook %s: %w", w.Name, errGone)
	}
	return fmt.Errorf("webhook %s answered %s: %s", w.Name, resp.Status, oneLine(string(snippet), 200))
}

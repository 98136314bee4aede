package alerts

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"readpast/internal/queue"
)

// Message is what a delivery says, whatever its channel.
type Message struct {
	AlertID  string    `json:"alert_id"`
	Rule     string    `json:"rule"`
	Kind     string    `json:"kind"`
	State    string    `json:"state"` // firing, recovered or test
	Operator string    `json:"operator"`
	Scope    string    `json:"scope,omitempty"`
	Count    int       `json:"count"`
	Title    string    `json:"title"`
	Text     string    `json:"text"`
	Error    string    `json:"first_error,omitempty"`
	At       time.Time `json:"at"`
	URL      string    `json:"url,omitempty"`
}

// KindTest is the kind of a delivery sent by "Send a test".
const KindTest = "test"

// message words a delivery.
func (c *Config) message(d queue.AlertDelivery) Message {
	m := Message{AlertID: d.Key, Rule: d.Rule, Kind: d.Kind, State: "firing", Operator: d.Operator, Scope: d.Scope,
		Count: d.Count, Title: d.Subject, Text: d.Subject, Error: d.Detail, At: d.CreatedAt, URL: c.DashboardURL}
	switch {
	case d.Kind == KindTest:
		m.State = "test"
	case strings.HasSuffix(d.Kind, ".recovered"):
		m.State, m.Kind = "recovered", strings.TrimSuffix(d.Kind, ".recovered")
	}
	if d.Count > 1 {
		plural := kinds[d.Kind].plural
		if plural == "" {
			plural = "events"
		}
		m.Title = fmt.Sprintf("%s %s in %s", thousands(d.Count), plural, d.Scope)
		m.Text = m.Title + ", first: " + d.Subject
	}
	if d.Detail != "" && d.Detail != d.Subject {
		if d.Count > 1 {
			m.Text += "; first error: " + d.Detail
		} else {
			m.Text += ": " + d.Detail
		}
	}
	return m
}

// emailSubject is the subject line of a message.
func (m Message) emailSubject() string {
	prefix := "[ReadPast] "
	switch m.State {
	case "recovered":
		prefix = "[ReadPast recovered] "
	case "test":
		prefix = "[ReadPast test] "
	}
	return prefix + oneLine(m.Title, 200)
}

// emailBody is the plain-text body of a message.
func (m Message) emailBody() string {
	var b strings.Builder
	b.WriteString(m.Text + "\n\n")
	fmt.Fprintf(&b, "Rule: %s (%s)\nState: %s\n", m.Rule, m.Kind, m.State)
	if m.Count > 1 {
		fmt.Fprintf(&b, "Count: %s\n", thousands(m.Count))
	}
	if m.URL != "" {
		fmt.Fprintf(&b, "Dashboard: %s\n", m.URL)
	}
	fmt.Fprintf(&b, "Alert id: %s\n", m.AlertID)
	return b.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// thousands writes n with comma separators: 1,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

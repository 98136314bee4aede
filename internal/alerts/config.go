// Package alerts tells operators what went wrong (docs/ALERTS.md): rules
// match the facts the store records (a task that failed for good) or find
// conditions by bounded reads (a stuck queue, a silent node), and each
// match becomes deliveries, one per channel of each operator the rule
// names, kept in the store's outbox and sent by exactly one node at a time,
// by e-mail or signed webhook. Operators, channels and their secrets live in
// the node's configuration file only.
package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"readpast/internal/secretfile"
)

// Config is the alerts part of a node's configuration: a JSON file given by
// --alerts-config (docs/ALERTS.md, "Configuration"). Give every node of a
// cluster the same file: any node may send any delivery.
type Config struct {
	SMTP      *SMTP      `json:"smtp,omitempty"`
	Operators []Operator `json:"operators"`
	Rules     []Rule     `json:"rules"`
	// DashboardURL, when set, is linked from every message.
	DashboardURL string `json:"dashboard_url,omitempty"`
}

// SMTP is the mail server e-mail channels send through.
type SMTP struct {
	Host string `json:"host"`
	Port int    `json:"port,omitempty"` // default 587 (starttls), 465 (tls), 25 (none)
	// TLS is "starttls" (default: the connection must be upgraded),
	// "tls" (implicit TLS from the first byte) or "none" (plain text; only
	// for a relay on the same host).
	TLS      string `json:"tls,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	From     string `json:"from"`
	// CAFile is a PEM file of certificate authorities to trust besides the
	// system's (a relay with an internal CA).
	CAFile string `json:"ca_file,omitempty"`
}

// Operator is someone to notify, by name, through one or more channels.
type Operator struct {
	Name     string    `json:"name"`
	Email    []string  `json:"email,omitempty"`
	Webhooks []Webhook `json:"webhooks,omitempty"`
}

// Webhook is an HTTP endpoint that receives signed JSON.
type Webhook struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
	// Format is "plain" (default), "slack" or "teams".
	Format string `json:"format,omitempty"`
}

// Rule says which facts or conditions notify which operators.
type Rule struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"` // one of Kinds
	Operators []string `json:"operators"`
	// Filters; empty matches all.
	Queues    []string `json:"queues,omitempty"`
	Schedules []string `json:"schedules,omitempty"`
	Jobs      []string `json:"jobs,omitempty"`    // task_failed (a job's step tasks), job_failed, job_long_running
	Targets   []string `json:"targets,omitempty"` // task_failed, target_unreachable
	// Error filters of task_failed (SQL Server Agent's alerts on error
	// number and severity; PostgreSQL's SQLSTATE class).
	ErrorNumber   int    `json:"error_number,omitempty"`
	MinSeverity   int    `json:"min_severity,omitempty"`
	SQLStateClass string `json:"sqlstate_class,omitempty"`
	// Threshold of the time-based kinds (how long a queue waited, a node
	// was silent, a task ran, a schedule is late).
	Threshold Duration `json:"threshold,omitempty"`
	// Window is the digest window of event rules: every match of a window
	// is one delivery per channel, sent when the window ends (default 30s;
	// "0s" sends each match at once).
	Window *Duration `json:"window,omitempty"`
	// MedianFactor (task_long_running): a task a schedule made is long when
	// it has run for more than this many times the median of its
	// schedule's last MedianRuns (default 10) successful runs; at least 3
	// are needed, else Threshold applies.
	MedianFactor float64 `json:"median_factor,omitempty"`
	MedianRuns   int     `json:"median_runs,omitempty"`
	// Recovery: time-based rules notify again when the condition ends.
	Recovery bool `json:"recovery,omitempty"`
}

// Duration is a time.Duration written as "90s", "5m" in JSON.
type Duration time.Duration

// UnmarshalJSON reads "5m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("write durations as strings such as \"5m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration (e.g. 90s, 5m, 1h)", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes "5m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// DefaultWindow is an event rule's digest window when it sets none: a
// failure is told within the window and a second (well within a minute),
// and a storm is at most one message per window per channel.
const DefaultWindow = 30 * time.Second

// EffectiveWindow is an event rule's digest window; -1 for a condition rule.
func (r Rule) EffectiveWindow() time.Duration {
	if !kinds[r.Kind].isEvent() {
		return -1
	}
	return r.window()
}

func (r Rule) window() time.Duration {
	if r.Window == nil {
		return DefaultWindow
	}
	return time.Duration(*r.Window)
}

// LoadFile reads and checks the configuration at path. The file holds
// secrets, so on Unix it must not be readable by group or others.
func LoadFile(path string) (*Config, error) {
	b, err := secretfile.Read("alerts configuration", path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse reads and checks a configuration.
func Parse(b []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("alerts configuration: %v (docs/ALERTS.md shows the format)", err)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Check validates the configuration; the error names the part to fix.
func (c *Config) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("alerts configuration: "+format, a...)) }
	ops := map[string]*Operator{}
	for i := range c.Operators {
		o := &c.Operators[i]
		if !validName(o.Name) {
			bad("operator %d: name %q must be 1 to 64 letters, digits, '-', '_' or '.'", i+1, o.Name)
		}
		if ops[o.Name] != nil {
			bad("operator %s is defined twice", o.Name)
		}
		ops[o.Name] = o
		if len(o.Email) == 0 && len(o.Webhooks) == 0 {
			bad("operator %s has no channel: give it an e-mail address or a webhook", o.Name)
		}
		for _, a := range o.Email {
			if _, err := mail.ParseAddress(a); err != nil {
				bad("operator %s: %q is not an e-mail address", o.Name, a)
			}
		}
		if len(o.Email) > 0 && (c.SMTP == nil || c.SMTP.Host == "") {
			bad("operator %s has e-mail addresses but there is no smtp server: add \"smtp\": {\"host\": …, \"from\": …}", o.Name)
		}
		hooks := map[string]bool{}
		for j, w := range o.Webhooks {
			if !validName(w.Name) || hooks[w.Name] {
				bad("operator %s: webhook %d needs a name of its own (letters, digits, '-', '_', '.')", o.Name, j+1)
			}
			hooks[w.Name] = true
			u, err := url.Parse(w.URL)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				bad("operator %s: webhook %s: the url must be an http(s) URL", o.Name, w.Name)
			}
			if len(w.Secret) < 16 {
				bad("operator %s: webhook %s: the signing secret must be at least 16 characters", o.Name, w.Name)
			}
			switch w.Format {
			case "", "plain", "slack", "teams":
			default:
				bad("operator %s: webhook %s: format %q is not one of plain, slack, teams", o.Name, w.Name, w.Format)
			}
		}
	}
	if s := c.SMTP; s != nil {
		switch s.TLS {
		case "", "starttls", "tls", "none":
		default:
			bad("smtp: tls %q is not one of starttls, tls, none", s.TLS)
		}
		if _, err := mail.ParseAddress(s.From); err != nil {
			bad("smtp: from %q is not an e-mail address", s.From)
		}
		if s.Port < 0 || s.Port > 65535 {
			bad("smtp: port %d is not a TCP port", s.Port)
		}
	}
	rules := map[string]bool{}
	for i, r := range c.Rules {
		if !validName(r.Name) || rules[r.Name] {
			bad("rule %d: needs a name of its own (1 to 64 letters, digits, '-', '_', '.')", i+1)
		}
		rules[r.Name] = true
		k, ok := kinds[r.Kind]
		if !ok {
			bad("rule %s: kind %q is not one of %s", r.Name, r.Kind, strings.Join(KindNames(), ", "))
			continue
		}
		if len(r.Operators) == 0 {
			bad("rule %s names no operator", r.Name)
		}
		for _, o := range r.Operators {
			if ops[o] == nil {
				bad("rule %s: operator %s is not defined in \"operators\"", r.Name, o)
			}
		}
		if r.MedianFactor < 0 || r.MedianRuns < 0 || r.MedianRuns > 100 || (r.MedianFactor > 0 && r.Kind != "task_long_running" && r.Kind != "job_long_running") {
			bad("rule %s: median_factor is for task_long_running, above 0, over 3 to 100 median_runs", r.Name)
		}
		if k.needsThreshold && r.Threshold <= 0 && r.MedianFactor <= 0 {
			bad("rule %s: kind %s needs a threshold (e.g. \"threshold\": \"10m\")", r.Name, r.Kind)
		}
		if !k.isEvent() && r.Window != nil {
			bad("rule %s: window is for event rules (task_failed); %s notifies once per condition", r.Name, r.Kind)
		}
		if r.SQLStateClass != "" && len(r.SQLStateClass) != 2 {
			bad("rule %s: sqlstate_class %q must be the two first characters of a SQLSTATE (e.g. 40)", r.Name, r.SQLStateClass)
		}
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// operator returns the operator named n.
func (c *Config) operator(n string) *Operator {
	for i := range c.Operators {
		if c.Operators[i].Name == n {
			return &c.Operators[i]
		}
	}
	return nil
}

// channels are an operator's channel names: "email" and "webhook:<name>".
func (o *Operator) channels() []string {
	var out []string
	if len(o.Email) > 0 {
		out = append(out, "email")
	}
	for _, w := range o.Webhooks {
		out = append(out, "webhook:"+w.Name)
	}
	return out
}

func (o *Operator) webhook(channel string) *Webhook {
	name, ok := strings.CutPrefix(channel, "webhook:")
	if !ok {
		return nil
	}
	for i := range o.Webhooks {
		if o.Webhooks[i].Name == name {
			return &o.Webhooks[i]
		}
	}
	return nil
}

// secrets are the configuration's secret strings: what no page, answer or
// log line may show.
func (c *Config) secrets() []string {
	var out []string
	if c.SMTP != nil && c.SMTP.Password != "" {
		out = append(out, c.SMTP.Password)
	}
	for _, o := range c.Operators {
		for _, w := range o.Webhooks {
			out = append(out, w.Secret)
		}
	}
	return out
}

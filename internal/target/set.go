package target

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"readpast/internal/dialect"
)

// Set is a node's named targets (docs/TARGETS.md): the ones the operator
// configured, the store as StoreName, and the node's default target as
// DefaultName. It opens each on first use and again after an open failed, so
// a target that is down when the node starts does not stop it; it holds each
// target's reachability, checked by Check at a bounded rate, never per page
// view. DSNs stay inside: Info and Status carry none.
type Set struct {
	node    string
	log     *slog.Logger
	order   []string
	entries map[string]*entry
	secrets []string
	// activity keeps the latest activity reads (activity.go).
	activity activityCache
}

type entry struct {
	spec    Spec
	dialect dialect.Dialect
	isStore bool // the store's own DSN: transactional tasks may run here
	alias   string

	mu     sync.Mutex
	tgt    Target
	status Status
	// toldUntracked: the warning that the target's sessions do not show
	// their statements was logged (once per target).
	toldUntracked bool
}

// Info is what may be shown of a target: never its DSN.
type Info struct {
	Name    string          `json:"name"`
	Dialect dialect.Dialect `json:"dialect"`
	Tags    []string        `json:"tags"`
	Pool    int             `json:"pool,omitempty"`
	// Store: the target is the store's own database.
	Store bool `json:"store,omitempty"`
	// AliasOf names the target this one is another name of ("default" is the
	// store when no --target-dsn is given).
	AliasOf string `json:"alias_of,omitempty"`
}

// Status is a target's reachability as the latest check found it.
type Status struct {
	Info
	Checked   time.Time     `json:"checked_at"` // zero before the first check
	Reachable bool          `json:"reachable"`
	Latency   time.Duration `json:"-"`
	LatencyMS float64       `json:"latency_ms"`
	Version   string        `json:"version,omitempty"`
	Error     string        `json:"error,omitempty"` // why the latest check failed, without secrets
	// Since is when Reachable last changed (the first check sets it).
	Since time.Time `json:"since"`
	// Sessions is how many sessions the node's pool held open on the
	// target at the check, the check's own included.
	Sessions int `json:"sessions"`
}

// NewSet makes the node's set: storeDSN is the store's, defaultDSN the
// --target-dsn ("" makes the store the default), specs the named targets.
// Nothing is opened yet.
func NewSet(node, storeDSN, defaultDSN string, specs []Spec, log *slog.Logger) (*Set, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{node: node, log: log, entries: map[string]*entry{}}
	add := func(sp Spec, isStore bool, alias string) error {
		d, _, err := dialect.Parse(sp.DSN)
		if err != nil {
			return fmt.Errorf("target %s: the DSN is not one ReadPast reads", sp.Name)
		}
		if _, dup := s.entries[sp.Name]; dup {
			return fmt.Errorf("target %s is configured twice: keep one", sp.Name)
		}
		e := &entry{spec: sp, dialect: d, isStore: isStore, alias: alias}
		e.status.Info = e.info()
		s.entries[sp.Name] = e
		s.order = append(s.order, sp.Name)
		return nil
	}
	if err := add(Spec{Name: StoreName, DSN: storeDSN}, true, ""); err != nil {
		return nil, err
	}
	def := Spec{Name: DefaultName, DSN: defaultDSN}
	alias := ""
	if defaultDSN == "" || defaultDSN == storeDSN {
		def.DSN, alias = storeDSN, StoreName
	}
	if err := add(def, def.DSN == storeDSN, alias); err != nil {
		return nil, err
	}
	for _, sp := range specs {
		if err := add(sp, sp.DSN == storeDSN, ""); err != nil {
			return nil, err
		}
		s.secrets = append(s.secrets, sp.DSN)
	}
	s.secrets = Secrets(append(s.secrets, storeDSN, defaultDSN)...)
	return s, nil
}

// Single is a set of one target that is the default (and the store when
// isStore): how a node built around one target.Target sees it.
func Single(t Target, isStore bool) *Set {
	s := &Set{log: slog.New(slog.DiscardHandler), entries: map[string]*entry{}}
	e := &entry{spec: Spec{Name: DefaultName}, dialect: t.Dialect(), isStore: isStore, tgt: t}
	e.status.Info = e.info()
	s.entries[DefaultName], s.order = e, []string{DefaultName}
	if isStore {
		st := &entry{spec: Spec{Name: StoreName}, dialect: t.Dialect(), isStore: true, tgt: t}
		st.status.Info = st.info()
		s.entries[StoreName], s.order = st, []string{StoreName, DefaultName}
	}
	return s
}

func (e *entry) info() Info {
	tags := e.spec.Tags
	if tags == nil {
		tags = []string{}
	}
	return Info{Name: e.spec.Name, Dialect: e.dialect, Tags: tags, Pool: e.spec.Pool, Store: e.isStore, AliasOf: e.alias}
}

// Names lists the targets this node serves, the store and the default
// first, then the named ones in the order given.
func (s *Set) Names() []string { return append([]string(nil), s.order...) }

// Serves reports whether the node has a target of that name.
func (s *Set) Serves(name string) bool { _, ok := s.entries[name]; return ok }

// IsStore reports whether the target name is the store's own database.
func (s *Set) IsStore(name string) bool {
	e, ok := s.entries[name]
	return ok && e.isStore
}

// Infos describes every target, in Names order.
func (s *Set) Infos() []Info {
	out := make([]Info, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.entries[n].info())
	}
	return out
}

// Tagged lists the names of the targets that carry tag, sorted.
func (s *Set) Tagged(tag string) []string {
	var out []string
	for _, n := range s.order {
		for _, t := range s.entries[n].spec.Tags {
			if t == tag {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ErrNotServed is the error of Get for a name the node does not serve.
var ErrNotServed = errors.New("this node does not serve the target")

// Get returns the named target, opening it if it is not open yet (or its
// last open failed). The error never holds the DSN's secrets.
func (s *Set) Get(ctx context.Context, name string) (Target, error) {
	e, ok := s.entries[name]
	if !ok {
		return nil, fmt.Errorf("target %s: %w", name, ErrNotServed)
	}
	if e.alias != "" {
		return s.Get(ctx, e.alias)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tgt != nil {
		return e.tgt, nil
	}
	t, err := OpenPooled(ctx, e.spec.DSN, s.node, e.spec.Pool)
	if err != nil {
		// Not connected: the attempt fails and backs off (SessionLost says no).
		return nil, notConnected{RedactError(fmt.Errorf("target %s: %w", name, err), s.secretsOf(e)...)}
	}
	e.tgt = t
	return t, nil
}

func (s *Set) secretsOf(e *entry) []string { return []string{e.spec.DSN} }

// Redact removes every DSN secret the set holds from text.
func (s *Set) Redact(text string) string { return Redact(text, s.secrets) }

// Close closes every opened target.
func (s *Set) Close() error {
	var errs []error
	for _, n := range s.order {
		e := s.entries[n]
		e.mu.Lock()
		if e.tgt != nil && e.alias == "" {
			errs = append(errs, e.tgt.Close())
			e.tgt = nil
		}
		e.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Status is the latest check of the named target; false when the node does
// not serve it. Alerts read reachability here (docs/TARGETS.md).
func (s *Set) Status(name string) (Status, bool) {
	e, ok := s.entries[name]
	if !ok {
		return Status{}, false
	}
	if e.alias != "" {
		st, _ := s.Status(e.alias)
		st.Info = e.info()
		return st, true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status, true
}

// Statuses is every target's latest check, in Names order.
func (s *Set) Statuses() []Status {
	out := make([]Status, 0, len(s.order))
	for _, n := range s.order {
		st, _ := s.Status(n)
		out = append(out, st)
	}
	return out
}

// maxStatusError bounds the error a status keeps, in bytes.
const maxStatusError = 400

// ProbeTimeout bounds one reachability check of one target.
const ProbeTimeout = 5 * time.Second

// Check probes every target once, side by side, each within ProbeTimeout,
// and records what it found. A target that fails its check is closed, so
// the next use opens it anew.
func (s *Set) Check(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range s.order {
		e := s.entries[n]
		if e.alias != "" {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.check(ctx, e) }()
	}
	wg.Wait()
}

func (s *Set) check(ctx context.Context, e *entry) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	start := time.Now()
	var version string
	t, err := s.Get(ctx, e.spec.Name)
	if err == nil {
		if p, ok := t.(prober); ok {
			version, err = p.probe(ctx)
		}
	}
	took := time.Since(start)
	sessions := 0
	if o, ok := t.(opener); ok && err == nil {
		sessions = o.openSessions()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	was := e.status
	st := Status{Info: e.info(), Checked: time.Now(), Reachable: err == nil, Latency: took,
		LatencyMS: float64(took.Microseconds()) / 1000, Version: version, Since: was.Since, Sessions: sessions}
	if err != nil {
		st.Error = Redact(err.Error(), s.secrets)
		if len(st.Error) > maxStatusError {
			// Every heartbeat carries it: keep the node's row small.
			st.Error = strings.ToValidUTF8(st.Error[:maxStatusError], "") + " …"
		}
		st.Version = was.Version
	}
	if was.Checked.IsZero() || was.Reachable != st.Reachable {
		st.Since = st.Checked
		if !was.Checked.IsZero() {
			if st.Reachable {
				s.log.Info("target reachable again", "target", e.spec.Name)
			} else {
				s.log.Warn("target unreachable", "target", e.spec.Name, "err", st.Error)
			}
		}
	}
	if u, ok := t.(untracker); ok && err == nil && u.untrackedSessions() && !e.toldUntracked {
		e.toldUntracked = true
		s.log.Warn("the target's sessions do not show their statements (track_activities is off): "+
			"each body's session is named after its attempt instead, a statement more per task, and a body "+
			"that sets its own application_name cannot be ended if its node freezes; "+
			"turn track_activities on for ReadPast's role or database (ALTER ROLE … SET track_activities = on)",
			"target", e.spec.Name)
	}
	e.status = st
}

// Watch checks every target each interval until ctx ends, the first time at
// once.
func (s *Set) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// EndSessions implements SessionEnder over every opened target that can
// end sessions: the names are attempts', each in one target.
func (s *Set) EndSessions(ctx context.Context, names []string) (int, error) {
	total := 0
	var errs []error
	for _, n := range s.order {
		e := s.entries[n]
		if e.alias != "" {
			continue
		}
		e.mu.Lock()
		t := e.tgt
		e.mu.Unlock()
		if ender, ok := t.(SessionEnder); ok && t != nil {
			k, err := ender.EndSessions(ctx, names)
			total += k
			if err != nil {
				errs = append(errs, fmt.Errorf("target %s: %w", n, err))
			}
		}
	}
	return total, errors.Join(errs...)
}

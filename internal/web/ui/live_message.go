package ui

// liveMessage is what a client receives: a full snapshot on connect, then only
// what changed. Fields are small texts by key; rows are table rows by id with
// their order when it changed; sections are whole fragments by name.
type liveMessage struct {
	Snapshot bool              `json:"snapshot,omitempty"`
	Fields   map[string]string `json:"fields,omitempty"`
	Order    []string          `json:"order,omitempty"`
	Rows     map[string]string `json:"rows,omitempty"`
	Sections map[string]string `json:"sections,omitempty"`
}

func (m liveMessage) empty() bool {
	return len(m.Fields) == 0 && m.Order == nil && len(m.Rows) == 0 && len(m.Sections) == 0
}

// snapshotOf is everything a new client needs.
func snapshotOf(fields map[string]string, st viewState) liveMessage {
	order := st.order
	if order == nil {
		order = []string{}
	}
	return liveMessage{Snapshot: true, Fields: fields, Order: order, Rows: st.rows, Sections: st.sections}
}

// diffView is what changed from old to new.
func diffView(old, new viewState) liveMessage {
	var m liveMessage
	if !equalStrings(old.order, new.order) {
		m.Order = new.order
		if m.Order == nil {
			m.Order = []string{}
		}
	}
	for id, html := range new.rows {
		if old.rows[id] != html {
			if m.Rows == nil {
				m.Rows = map[string]string{}
			}
			m.Rows[id] = html
		}
	}
	for name, html := range new.sections {
		if old.sections[name] != html {
			if m.Sections == nil {
				m.Sections = map[string]string{}
			}
			m.Sections[name] = html
		}
	}
	return m
}

// diffFields is the fields whose text changed or that are new.
func diffFields(old, new map[string]string) map[string]string {
	var d map[string]string
	for k, v := range new {
		if ov, ok := old[k]; !ok || ov != v {
			if d == nil {
				d = map[string]string{}
			}
			d[k] = v
		}
	}
	return d
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package templates

// Audit is the audit page: who changed what, newest first.
type Audit struct {
	Page
	Rows          []AuditRow
	Newest, Older *Link
	ExportJSON    string
	ExportLines   string
}

// AuditRow is one audited change.
type AuditRow struct {
	ID        int64
	At        Time
	Actor     string
	Action    string
	Object    string
	ObjectURL string // the object's page, when it has one
	Detail    string
}

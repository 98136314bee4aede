package templates

// Alerts is the Alerts page: operators, rules, what fires now, and the
// deliveries, newest first.
type Alerts struct {
	Page
	Configured    bool
	Operators     []AlertOperator
	Rules         []AlertRule
	Firing        []AlertFiring
	State         string // the deliveries' state filter; "" for all
	Filters       []Link
	Deliveries    []AlertDelivery
	Newest, Older *Link
}

// AlertOperator is an operator and its channels' names.
type AlertOperator struct {
	Name     string
	Channels string
	Test     Action
}

// AlertRule is a configured rule.
type AlertRule struct {
	Name, Kind, Operators, Filters, Timing, Doc string
	Recovery                                    bool
}

// AlertFiring is a condition firing now.
type AlertFiring struct {
	Key    string
	Since  Time
	Detail string
}

// AlertDelivery is one delivery's row.
type AlertDelivery struct {
	ID        int64
	AlertID   string
	Created   Time
	Rule      string
	Operator  string
	Channel   string
	Subject   string
	Count     string
	State     string
	Attempts  int
	NextTry   Time
	LastError string
}

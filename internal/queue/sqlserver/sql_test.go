package sqlserver

// Offline checks of the T-SQL: no SQL Server runs here, so these catch what a
// server would reject or what would silently misbehave, as far as a reader of
// the text can: parameters named in a batch versus the arguments the Go code
// binds for it, GO lines, declarations, hint combinations, BEGIN/END balance,
// and the JSON fields OPENJSON reads.

import (
	"database/sql"
	"encoding/json"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/queue"
	"readpast/internal/sqlscript"
	"readpast/migrations"
)

// boundQuery is a batch with the arguments its Go caller builds for it.
type boundQuery struct {
	q    query
	args []any
}

func allBoundQueries(t *testing.T) []boundQuery {
	t.Helper()
	prio := 5
	claim := claimArgs(queue.ClaimParams{Queue: "q", Owner: "n/w1", Limit: 10, LeaseDuration: time.Minute}, 42)
	attempt := queue.Attempt{Lease: queue.Lease{TaskID: 7, Token: 9}, Outcome: queue.OutcomeFailed, Error: "boom", StartedAt: time.Now()}
	finish := finishArgs(attempt, modeFinish, backoffMillis())
	hb, err := heartbeatArgs([]queue.Lease{{TaskID: 1, Token: 2}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w, m, paused := 3, 2, true
	uq := updateQueueArgs("q", queue.QueueUpdate{Workers: &w, MaxRunning: &m, Paused: &paused, Actor: "ann"})
	enq, err := enqueueArgs([]queue.NewTask{{Queue: "q", Body: "SELECT 1", Priority: &prio, MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	listQuery, list := listArgs(queue.ListParams{State: queue.StatePending, Queue: "q", Limit: 50})
	groupQuery, group := listArgs(queue.ListParams{Group: "g", Queue: "q", Before: 10, Limit: 50})
	logQuery, logq := attemptsArgs(queue.LogQuery{Queue: "q", Outcome: queue.OutcomeFailed, Since: time.Now(), Limit: 100})
	logOfQueue, logqQueue := attemptsArgs(queue.LogQuery{Queue: "q", Before: 10, Limit: 100})
	purge, err := purgeArgs(time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(append(scheduleBoundQueries(t), jobBoundQueries(t)...), alertBoundQueries()...), []boundQuery{
		{claimBatch, claim},
		{finishBatch, finish},
		{markCommittedBatch, []any{sql.Named("id", int64(1)), sql.Named("token", int64(2))}},
		{expiredLeases, limitArgs(10)},
		{heartbeatBatch, hb},
		{setSessionBatch, setSessionArgs(queue.Lease{TaskID: 1, Token: 2}, "55")},
		{cancelBatch, taskActorArgs(1, "ann")},
		{retryBatch, taskActorArgs(1, "ann")},
		{updateQueueBatch, uq},
		{setGroupLimitBatch, setGroupLimitArgs("g", 2, "ann")},
		{enqueueBatch, enq},
		{getTaskQuery, idArgs("id", 1)},
		{listQuery, list},
		{groupQuery, group},
		{queuesQuery, queuesArgs("q")},
		{groupsQuery, nil},
		{taskAttemptsQuery, idArgs("task_id", 1)},
		{taskResultsQuery, idArgs("task_id", 1)},
		{registerNodeBatch, registerNodeArgs(queue.Node{ID: "n1", Hostname: "h", PID: 1})},
		{heartbeatNodeBatch, nodeInfoArgs("n1", "")},
		{stopNodeBatch, stopNodeArgs("n1")},
		{nodesQuery, nodesArgs(time.Minute)},
		{logQuery, logq},
		{logOfQueue, logqQueue},
		{purgeNodesBatch, purgeNodesArgs(time.Now())},
		{purgeAttemptsBatch, purge},
		{purgeTasksBatch, purge},
		{queueSettingsQuery, nil},
		{auditQuery, auditArgs(10, 100)},
		{deleteQueueBatch, deleteQueueArgs("q", "ann")},
		{createBulkBatch, createBulkArgs(queue.NewBulk{Action: queue.BulkCancel, Selection: queue.BulkSelection{IDs: []int64{1}}, Actor: "ann"})},
		{claimBulkBatch, claimBulkArgs("n1", time.Minute)},
		{advanceBulkBatch, advanceBulkArgs(queue.BulkAdvance{ID: 1, Token: 2, Cursor: 3, Lease: time.Minute})},
		{getBulkQuery, idArgs("id", 1)},
		{bulksQuery, []any{sql.Named("limit", 20), sql.Named("before", int64(10))}},
		{deleteTaskBatch, taskActorArgs(1, "ann")},
		{countTasksQuery, countTasksArgs(queue.ListParams{State: queue.StateFailed}, 1000)},
		{countTasksQuery, countTasksArgs(queue.ListParams{State: queue.StateFailed, Text: "x"}, 1000)},
		searchBound(queue.ListParams{Queue: "q", Text: "x", Limit: 50}),
		searchBound(queue.ListParams{Group: "g", Text: "x", Limit: 50}),
		{purgeRollupsBatch, []any{sql.Named("minutes", datetime2(time.Now())), sql.Named("hours", datetime2(time.Now()))}},
	}...)
}

// stripSQL blanks out comments and string literals, keeping line breaks, so
// the checks below see only code.
func stripSQL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += end + 4
			b.WriteByte(' ')
		case s[i] == '\'':
			i++
			for i < len(s) {
				if s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'' {
					i += 2
					continue
				}
				if s[i] == '\'' {
					i++
					break
				}
				i++
			}
			b.WriteString("''")
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

var (
	variableRE = regexp.MustCompile(`(^|[^@\w])@([A-Za-z_]\w*)`)
	declareRE  = regexp.MustCompile(`(?i)\bDECLARE\s+@(\w+)([^;]*)`)
	hintsRE    = regexp.MustCompile(`(?i)\bWITH\s*\(([A-Z_,\s]+(?:\([^()]*\)[A-Z_,\s]*)*)\)`)
	wordRE     = regexp.MustCompile(`(?i)\b(BEGIN|END|CASE|TRAN|TRANSACTION|COMMIT|ROLLBACK)\b`)
)

// declared returns the variables a batch declares, failing on a DECLARE that
// declares more than one (the checks rely on one per statement).
func declared(t *testing.T, name, code string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range declareRE.FindAllStringSubmatch(code, -1) {
		v := strings.ToLower(m[1])
		if out[v] {
			t.Errorf("%s: @%s is declared twice", name, m[1])
		}
		out[v] = true
		rest := m[2]
		for parens := regexp.MustCompile(`\([^()]*\)`); parens.MatchString(rest); {
			rest = parens.ReplaceAllString(rest, "")
		}
		if regexp.MustCompile(`,\s*@`).MatchString(rest) {
			t.Errorf("%s: DECLARE @%s declares more than one variable: write one DECLARE per variable", name, m[1])
		}
	}
	return out
}

// placeholders returns the @names a batch reads that it does not declare:
// the parameters it expects from the caller.
func placeholders(t *testing.T, name, code string) []string {
	t.Helper()
	decl := declared(t, name, code)
	set := map[string]bool{}
	for _, m := range variableRE.FindAllStringSubmatch(code, -1) {
		v := strings.ToLower(m[2])
		if !decl[v] {
			set[v] = true
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func sortedLower(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	sort.Strings(out)
	return out
}

func TestQueryParametersMatchTheirArguments(t *testing.T) {
	for _, bq := range allBoundQueries(t) {
		code := stripSQL(bq.q.text)
		want := sortedLower(bq.q.params)
		if got := placeholders(t, bq.q.name, code); !slices.Equal(got, want) {
			t.Errorf("%s: the batch reads parameters %v but the query says %v", bq.q.name, got, want)
		}
		var bound []string
		for _, a := range bq.args {
			na, ok := a.(sql.NamedArg)
			if !ok {
				t.Errorf("%s: argument %v is not a sql.NamedArg", bq.q.name, a)
				continue
			}
			if na.Value == nil {
				// go-mssqldb sends an untyped nil as TDS NULLTYPE (0x1F).
				t.Errorf("%s: @%s is an untyped nil: bind a typed NULL (sql.NullString, mssql.NullDateTime, …)", bq.q.name, na.Name)
			}
			bound = append(bound, na.Name)
		}
		if got := sortedLower(bound); !slices.Equal(got, want) {
			t.Errorf("%s: the Go code binds %v but the batch reads %v", bq.q.name, got, want)
		}
		for v := range declared(t, bq.q.name, code) {
			if slices.Contains(want, v) {
				t.Errorf("%s: @%s is both a parameter and declared in the batch", bq.q.name, v)
			}
		}
	}
}

func TestQueriesAreSingleBatches(t *testing.T) {
	for _, bq := range allBoundQueries(t) {
		parts, err := sqlscript.Split(bq.q.text, sqlscript.TSQL)
		if err != nil || len(parts) != 1 {
			t.Errorf("%s: splits into %d batches on GO (%v); it must be one batch", bq.q.name, len(parts), err)
		}
		for i, line := range strings.Split(bq.q.text, "\n") {
			if strings.EqualFold(strings.TrimSpace(line), "go") {
				t.Errorf("%s: line %d is a GO separator", bq.q.name, i+1)
			}
		}
	}
}

func TestQueryHintsAndBlocks(t *testing.T) {
	for _, bq := range allBoundQueries(t) {
		name, code := bq.q.name, stripSQL(bq.q.text)
		upper := strings.ToUpper(code)
		for _, banned := range []string{"NOLOCK", "READUNCOMMITTED", "MERGE "} {
			if strings.Contains(upper, banned) {
				t.Errorf("%s: uses %s", name, strings.TrimSpace(banned))
			}
		}
		for _, m := range hintsRE.FindAllStringSubmatch(code, -1) {
			hints := map[string]bool{}
			for _, h := range strings.Split(strings.ToUpper(m[1]), ",") {
				h = strings.TrimSpace(h)
				if i := strings.IndexByte(h, '('); i >= 0 {
					h = strings.TrimSpace(h[:i]) // INDEX(name)
				}
				hints[h] = true
			}
			if hints["READPAST"] && !hints["UPDLOCK"] && !hints["XLOCK"] && !hints["READCOMMITTEDLOCK"] {
				t.Errorf("%s: WITH (%s): READPAST needs a locking read (UPDLOCK or READCOMMITTEDLOCK) to run under READ_COMMITTED_SNAPSHOT", name, m[1])
			}
			// SQL Server allows at most one hint of each of these groups per table.
			for _, group := range [][]string{
				{"PAGLOCK", "NOLOCK", "READCOMMITTEDLOCK", "ROWLOCK", "TABLOCK", "TABLOCKX"},
				{"HOLDLOCK", "NOLOCK", "READCOMMITTED", "REPEATABLEREAD", "SERIALIZABLE"},
			} {
				var used []string
				for _, h := range group {
					if hints[h] {
						used = append(used, h)
					}
				}
				if len(used) > 1 {
					t.Errorf("%s: WITH (%s): %v are in one hint group; SQL Server allows one", name, m[1], used)
				}
			}
			if hints["READPAST"] && (hints["HOLDLOCK"] || hints["SERIALIZABLE"]) {
				t.Errorf("%s: WITH (%s): READPAST cannot be combined with HOLDLOCK", name, m[1])
			}
			if hints["UPDLOCK"] && hints["XLOCK"] {
				t.Errorf("%s: WITH (%s): UPDLOCK and XLOCK together", name, m[1])
			}
		}
		var begins, ends, cases, begintran, commits int
		words := wordRE.FindAllStringIndex(code, -1)
		for i, w := range words {
			word := strings.ToUpper(code[w[0]:w[1]])
			next := ""
			if i+1 < len(words) && strings.TrimSpace(code[w[1]:words[i+1][0]]) == "" {
				next = strings.ToUpper(code[words[i+1][0]:words[i+1][1]])
			}
			switch word {
			case "BEGIN":
				if next == "TRAN" || next == "TRANSACTION" {
					begintran++
				} else {
					begins++
				}
			case "COMMIT":
				commits++
			case "END":
				ends++
			case "CASE":
				cases++
			}
		}
		if begins+cases != ends {
			t.Errorf("%s: %d BEGIN and %d CASE but %d END", name, begins, cases, ends)
		}
		// markCommittedBatch ends the transaction beginTxBatch began, the
		// body's; every other batch commits only what it began.
		if name == markCommittedBatch.name {
			begintran++
		}
		if begintran != commits {
			t.Errorf("%s: %d BEGIN TRAN but %d COMMIT", name, begintran, commits)
		}
		if begintran > 0 && !strings.Contains(upper, "SET XACT_ABORT ON") {
			t.Errorf("%s: opens a transaction without SET XACT_ABORT ON", name)
		}
		if strings.Count(code, "(") != strings.Count(code, ")") {
			t.Errorf("%s: %d '(' but %d ')'", name, strings.Count(code, "("), strings.Count(code, ")"))
		}
		if strings.Contains(upper, "ELSE") && regexp.MustCompile(`(?i)END;\s*ELSE\b`).MatchString(code) {
			t.Errorf("%s: 'END; ELSE' ends the IF before its ELSE", name)
		}
	}
}

func TestClaimOutputTableMatchesTaskColumns(t *testing.T) {
	code := stripSQL(claimCore)
	start := strings.Index(code, "DECLARE @out TABLE (")
	if start < 0 {
		t.Fatal("claimCore declares no @out table")
	}
	body := code[start+len("DECLARE @out TABLE ("):]
	body = body[:strings.Index(body, ");")]
	var cols []string
	for _, line := range strings.Split(body, ",\n") {
		if f := strings.Fields(line); len(f) > 0 {
			cols = append(cols, f[0])
		}
	}
	if !slices.Equal(cols, taskColumnNames) {
		t.Errorf("@out columns %v\nwant task columns %v", cols, taskColumnNames)
	}
}

func TestJSONFieldsMatchOpenJSONPaths(t *testing.T) {
	pathRE := regexp.MustCompile(`'\$\.(\w+)'`)
	tags := func(v any) map[string]bool {
		out := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			out[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
		}
		return out
	}
	check := func(name, text string, fields map[string]bool) {
		paths := map[string]bool{}
		for _, m := range pathRE.FindAllStringSubmatch(text, -1) {
			paths[m[1]] = true
			if !fields[m[1]] {
				t.Errorf("%s: OPENJSON reads $.%s, which the Go side never writes", name, m[1])
			}
		}
		for f := range fields {
			if !paths[f] {
				t.Errorf("%s: the Go side writes %q, which OPENJSON never reads", name, f)
			}
		}
	}
	check("enqueue", enqueueBatch.text, tags(jsonTask{}))
	check("heartbeat", heartbeatBatch.text, map[string]bool{"id": true, "token": true})
}

func TestEnqueueArgsEncodeTimesAndDelays(t *testing.T) {
	prio := 0
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	args, err := enqueueArgs([]queue.NewTask{
		{Queue: "q", Body: "a", Priority: &prio, AvailableAt: at, MaxAttempts: 1},
		{Queue: "q", Body: "b", Priority: &prio, Delay: 90*time.Second + 1500*time.Microsecond, MaxAttempts: 1, Chain: "c", ContinueOnFailure: true, Transactional: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := string(args[0].(sql.NamedArg).Value.(mssql.NVarCharMax))
	var got []map[string]any
	if err := json.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatalf("enqueue JSON %s: %v", doc, err)
	}
	if got[0]["available_at"] != "2030-01-02T02:04:05.123456" {
		t.Errorf("available_at = %v, want UTC with microseconds", got[0]["available_at"])
	}
	if got[1]["delay_s"] != float64(90) || got[1]["delay_us"] != float64(1500) {
		t.Errorf("delay = %v s + %v µs, want 90 s + 1500 µs", got[1]["delay_s"], got[1]["delay_us"])
	}
	if _, ok := got[1]["available_at"]; ok {
		t.Errorf("a delayed task sends available_at too: %v", got[1])
	}
	if got[1]["continue_on_failure"] != float64(1) || got[1]["transactional"] != float64(1) || got[1]["chain"] != "c" {
		t.Errorf("flags or chain lost: %v", got[1])
	}
	if _, ok := got[0]["group"]; ok {
		t.Errorf("an empty group must be omitted (NULL), got %v", got[0])
	}

	_, err = enqueueArgs([]queue.NewTask{{Queue: "q", Body: "a", Priority: &prio, Delay: 100 * 365 * 24 * time.Hour}})
	if !queue.IsValidation(err) {
		t.Errorf("a delay past DATEADD's range: err = %v, want a validation error", err)
	}
	_, err = enqueueArgs([]queue.NewTask{{Queue: "q", Body: "a", Priority: &prio}, {Queue: "q", Body: "a", Priority: &prio, AvailableAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	if ve, ok := err.(*queue.ValidationError); !ok || ve.Field != "tasks[1].available_at" {
		t.Errorf("year 10000: err = %v, want a validation error on tasks[1].available_at", err)
	}
}

func TestLeaseTokensArePositive63Bit(t *testing.T) {
	for range 100 {
		tok, err := newLeaseToken()
		if err != nil {
			t.Fatal(err)
		}
		if tok < 0 {
			t.Fatalf("token %d is negative", tok)
		}
	}
}

func TestBackoffMillisFollowQueueBackoff(t *testing.T) {
	b := backoffMillis()
	for i, ms := range b {
		base := float64(int64(1)<<(i+1)) * 1000
		if base > 3600*1000 {
			base = 3600 * 1000
		}
		if float64(ms) < base*0.74 || float64(ms) > base*1.26 {
			t.Errorf("backoff for retry %d = %d ms, want %.0f ms ± 25 %%", i+1, ms, base)
		}
	}
}

func TestListArgs(t *testing.T) {
	_, args := listArgs(queue.ListParams{Limit: 7})
	if v := args[0].(sql.NamedArg).Value; v != 7 {
		t.Errorf("limit = %v, want the 7 given (queue.Checked fills in the default)", v)
	}
	// Every state of a group or a schedule merges a range per state of its
	// index (migrations/*/000001_baseline); with a state, or a chain, one seek serves.
	for p, want := range map[queue.ListParams]string{
		{Group: "g"}:                            listTasksByStateQuery.name,
		{Schedule: "s", Queue: "q"}:             listTasksByStateQuery.name,
		{Group: "g", State: queue.StatePending}: listTasksQuery.name,
		{Group: "g", Chain: "c"}:                listTasksQuery.name,
		{Queue: "q"}:                            listTasksQuery.name,
	} {
		if lq, _ := listArgs(p); lq.name != want {
			t.Errorf("listArgs(%+v) = %s; want %s", p, lq.name, want)
		}
	}
	_, args = listArgs(queue.ListParams{State: queue.StateRunning, Limit: 50})
	if _, ok := args[1].(sql.NamedArg).Value.(mssql.VarChar); !ok {
		t.Errorf("state is sent as %T; want varchar to match the varchar column", args[1].(sql.NamedArg).Value)
	}
}

// TestMigrationColumnsMatchPostgres keeps the SQL Server baseline's columns
// the same as the PostgreSQL one's, table by table, in order.
func TestMigrationColumnsMatchPostgres(t *testing.T) {
	read := func(dialect string) map[string][]string {
		b, err := fs.ReadFile(migrations.FS, dialect+"/000001_baseline.up.sql")
		if err != nil {
			t.Fatal(err)
		}
		tables := map[string][]string{}
		tableRE := regexp.MustCompile(`(?is)CREATE TABLE (?:dbo\.)?(\w+)\s*\((.*?)\n\);`)
		for _, m := range tableRE.FindAllStringSubmatch(stripSQL(string(b)), -1) {
			for _, line := range strings.Split(m[2], "\n") {
				f := strings.Fields(line)
				if len(f) < 2 || strings.EqualFold(f[0], "CONSTRAINT") || strings.EqualFold(f[0], "PRIMARY") ||
					strings.HasPrefix(strings.ToUpper(f[0]), "CHECK") {
					continue
				}
				if line[0] == ' ' && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     ") {
					tables[m[1]] = append(tables[m[1]], f[0])
				}
			}
		}
		return tables
	}
	mssql, pg := read("sqlserver"), read("postgres")
	if len(mssql) == 0 || len(mssql) != len(pg) {
		t.Fatalf("sqlserver has tables %v, postgres %v", keys(mssql), keys(pg))
	}
	for name, cols := range pg {
		if !slices.Equal(mssql[name], cols) {
			t.Errorf("table %s: sqlserver columns %v\npostgres columns %v", name, mssql[name], cols)
		}
	}
	files, _ := fs.Glob(migrations.FS, "sqlserver/*.sql")
	for _, f := range files {
		b, _ := fs.ReadFile(migrations.FS, f)
		if parts, err := sqlscript.Split(string(b), sqlscript.TSQL); err != nil || len(parts) != 1 {
			t.Errorf("%s splits into %d batches (%v); golang-migrate sends it as one", f, len(parts), err)
		}
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// targetHintsRE finds the hints written on the target of an UPDATE, DELETE
// or INSERT itself ("UPDATE dbo.t WITH (…)"), as opposed to hints on a table
// in its FROM clause ("UPDATE t … FROM dbo.t AS t WITH (…)").
var targetHintsRE = regexp.MustCompile(`(?is)\b(?:UPDATE(?:\s+TOP\s*\([^)]*\))?|DELETE(?:\s+TOP\s*\([^)]*\))?\s+FROM|INSERT\s+INTO)\s+dbo\.\w+\s+WITH\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)`)

// tableHintLimited is what SQL Server accepts on such a target (Microsoft's
// "Table Hints", <table_hint_limited>). FORCESEEK and INDEX are not among
// them: they go on a table of the FROM clause. Babelfish ignores hints, so
// only this check stands between such a batch and a syntax error on SQL
// Server.
var tableHintLimited = map[string]bool{
	"KEEPIDENTITY": true, "KEEPDEFAULTS": true, "HOLDLOCK": true, "IGNORE_CONSTRAINTS": true,
	"IGNORE_TRIGGERS": true, "NOWAIT": true, "PAGLOCK": true, "READCOMMITTED": true, "READCOMMITTEDLOCK": true,
	"READPAST": true, "REPEATABLEREAD": true, "ROWLOCK": true, "SERIALIZABLE": true, "SNAPSHOT": true,
	"TABLOCK": true, "TABLOCKX": true, "UPDLOCK": true, "XLOCK": true,
}

func TestTargetHintsAreOnesSQLServerTakesThere(t *testing.T) {
	for _, bq := range allBoundQueries(t) {
		code := stripSQL(bq.q.text)
		for _, m := range targetHintsRE.FindAllStringSubmatch(code, -1) {
			for _, h := range strings.Split(m[1], ",") {
				h = strings.ToUpper(strings.TrimSpace(h))
				if i := strings.IndexByte(h, '('); i >= 0 {
					h = strings.TrimSpace(h[:i])
				}
				if !tableHintLimited[h] {
					t.Errorf("%s: %s is not allowed on the target of an UPDATE, DELETE or INSERT: put the table in a FROM clause with an alias and the hint there (%q)", bq.q.name, h, strings.Join(strings.Fields(m[0]), " "))
				}
			}
		}
	}
}

func searchBound(p queue.ListParams) boundQuery {
	q, args := searchArgs(p, 100)
	return boundQuery{q, args}
}

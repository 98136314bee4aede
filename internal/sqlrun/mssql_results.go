package sqlrun

import (
	"database/sql"
	"reflect"

	mssql "github.com/microsoft/go-mssqldb"

	"readpast/internal/resultset"
)

// atResultSet reports whether the walk of a batch's token stream
// (RunMSSQLCapturing) stands at the start of a result set rather than at a
// statement's end.
//
// go-mssqldb's message-queue rows (mssql.Rowsq) stop NextResultSet at either
// and say which only in an unexported field, cols; asking through
// database/sql (Rows.Columns, or Rows.Next, which calls it) when it stands at
// a statement's end makes the driver read ahead to the next result set,
// passing statement ends and the errors of the token stream, which the walk
// must see. So the field is read, without changing it, by reflection (Go's
// reflect reads an unexported field's length). Should a driver version name
// it otherwise, no result set is kept and the batch runs as always;
// TestAtResultSetReadsTheDriver fails then.
func atResultSet(rows *sql.Rows) bool {
	r := reflect.ValueOf(rows).Elem().FieldByName("rowsi")
	if !r.IsValid() || r.Kind() != reflect.Interface || r.IsNil() {
		return false
	}
	q := r.Elem()
	if q.Type() != reflect.TypeOf((*mssql.Rowsq)(nil)) || q.IsNil() {
		return false
	}
	cols := q.Elem().FieldByName("cols")
	return cols.IsValid() && cols.Kind() == reflect.Slice && cols.Len() > 0
}

// captureSet reads the current result set's rows into capture up to its
// limits; the rest are left for NextResultSet to skip.
func captureSet(rows *sql.Rows, capture *resultset.Capture) {
	names, err := rows.Columns()
	if err != nil {
		return
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return
	}
	kinds := make([]resultset.Kind, len(types))
	for i, t := range types {
		kinds[i] = mssqlKind(t.DatabaseTypeName())
	}
	capture.Begin(names)
	values := make([]any, len(names))
	dest := make([]any, len(names))
	for i := range values {
		dest[i] = &values[i]
	}
	text := make([]*string, len(names))
	for rows.Next() {
		if !capture.WantsRow() {
			return
		}
		if err := rows.Scan(dest...); err != nil {
			return
		}
		for i, v := range values {
			text[i] = mssqlText(v, kinds[i])
		}
		capture.Row(text)
	}
}

// kindGUID marks a uniqueidentifier, which the driver returns as its 16
// bytes in the server's order.
const kindGUID resultset.Kind = 100

// mssqlKind is how a SQL Server column type's values read as text.
func mssqlKind(typeName string) resultset.Kind {
	switch typeName {
	case "BINARY", "VARBINARY", "IMAGE", "TIMESTAMP", "ROWVERSION":
		return resultset.Binary
	case "DATETIMEOFFSET":
		return resultset.Zoned
	case "DATE":
		return resultset.Date
	case "TIME":
		return resultset.Clock
	case "UNIQUEIDENTIFIER":
		return kindGUID
	}
	return resultset.Plain
}

func mssqlText(v any, k resultset.Kind) *string {
	if b, ok := v.([]byte); ok && k == kindGUID {
		var u mssql.UniqueIdentifier
		if u.Scan(b) == nil {
			s := u.String()
			return &s
		}
		return resultset.Text(v, resultset.Binary)
	}
	return resultset.Text(v, k)
}
